"""The intermediate result's Arrow IPC stream: written message by message, read back the same
as a stream writer's, and any damaged stream is a clear QueryError (never another error)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine.query.errors import QueryError
from engine.query.intermediate import IntermediateResult
from engine.query.plan import compile_query


def _group_by_result():
    plan = compile_query("SELECT a, COUNT(*), SUM(b) FROM t GROUP BY a")
    states = [fn.empty_state(3) for fn in plan.aggregations]
    return plan, IntermediateResult("group_by", keys=[np.array([1, 2, 3])], states=states)


def test_the_stream_is_a_standard_arrow_stream_and_round_trips():
    plan, result = _group_by_result()
    data = result.to_bytes(plan)
    table = pa.ipc.open_stream(data).read_all()  # any Arrow reader can read it
    assert table.column("k0").to_pylist() == [1, 2, 3]
    back = IntermediateResult.from_bytes(data)
    assert back.keys[0].tolist() == [1, 2, 3]
    assert [s[0].tolist() for s in back.decoded_states(plan)] == [[0, 0, 0], [0.0, 0.0, 0.0]]


def test_a_stream_of_several_batches_is_read_whole():
    plan, result = _group_by_result()
    result.kind, result.keys, result.states = "selection", None, None
    result.rows = pa.Table.from_batches([pa.record_batch({"x": [1, 2]})] * 3)
    back = IntermediateResult.from_bytes(result.to_bytes(plan))
    assert back.rows.column("x").to_pylist() == [1, 2] * 3


def test_every_truncation_is_a_query_error():
    # a cut at a message boundary too: it would otherwise read as a result with fewer groups
    plan, result = _group_by_result()
    data = result.to_bytes(plan)
    for cut in range(len(data)):
        with pytest.raises(QueryError, match="Malformed intermediate result"):
            IntermediateResult.from_bytes(data[:cut])
    with pytest.raises(QueryError, match="Malformed"):
        IntermediateResult.from_bytes(b"not arrow at all")
