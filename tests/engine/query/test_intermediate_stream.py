"""The intermediate result on the wire: an Arrow IPC stream written message by message, read
back the same as a stream writer's; or, for numeric keys and states, a numeric frame. Any
damaged stream or frame is a clear QueryError (never another error)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from engine.query import numeric_frame
from engine.query.errors import QueryError
from engine.query.intermediate import IntermediateResult
from engine.query.plan import compile_query


def _group_by_result(keys=("x", "y", "z")):
    """A group-by result; string keys travel as Arrow, numeric ones in a numeric frame."""
    plan = compile_query("SELECT a, COUNT(*), SUM(b) FROM t GROUP BY a")
    states = [fn.empty_state(3) for fn in plan.aggregations]
    keys = np.array(keys, dtype=object if isinstance(keys[0], str) else None)
    return plan, IntermediateResult("group_by", keys=[keys], states=states)


def test_the_stream_is_a_standard_arrow_stream_and_round_trips():
    plan, result = _group_by_result()
    data = result.to_bytes(plan)
    table = pa.ipc.open_stream(data).read_all()  # any Arrow reader can read it
    assert table.column("k0").to_pylist() == ["x", "y", "z"]
    back = IntermediateResult.from_bytes(data)
    assert back.keys[0].tolist() == ["x", "y", "z"]
    assert [s[0].tolist() for s in back.decoded_states(plan)] == [[0, 0, 0], [0.0, 0.0, 0.0]]


def test_numeric_results_travel_in_a_frame_and_read_back_the_same_as_through_arrow():
    """Numeric keys and COUNT/SUM/MIN/AVG states: a numeric frame, which reads back with the
    same dtypes and values (NaN and negative zero included) as the Arrow path gives."""
    plan = compile_query("SELECT a, COUNT(*), SUM(b), MIN(b), AVG(b) FROM t GROUP BY a")
    keys = np.array([3, -1, 2**40], dtype=np.int64)
    states = [fn.empty_state(3) for fn in plan.aggregations]
    states[1] = (np.array([np.nan, -0.0, 1e300]),)
    result = IntermediateResult("group_by", keys=[keys], states=states, trace={"t": [1]})
    result.stats["numDocsScanned"] = 12
    data = result.to_bytes(plan)
    assert data.startswith(numeric_frame.MAGIC)
    back = IntermediateResult.from_bytes(data)
    assert back.stats["numDocsScanned"] == 12 and back.trace == {"t": [1]}
    through_arrow = [
        fn.from_arrow(fn.to_arrow(s)) for fn, s in zip(plan.aggregations, states, strict=True)
    ]
    for got, expected in zip(back.decoded_states(plan), through_arrow, strict=True):
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert back.keys[0].dtype == np.int64 and back.keys[0].tolist() == keys.tolist()
    # a sketch state (its own codec) keeps the whole result on Arrow
    sketch = compile_query("SELECT a, DISTINCTCOUNTHLL(b) FROM t GROUP BY a")
    hll = IntermediateResult(
        "group_by", keys=[keys], states=[fn.empty_state(3) for fn in sketch.aggregations]
    )
    assert not hll.to_bytes(sketch).startswith(numeric_frame.MAGIC)


def test_every_damaged_frame_is_a_query_error():
    plan, result = _group_by_result(keys=(1, 2, 3))
    data = result.to_bytes(plan)
    assert data.startswith(numeric_frame.MAGIC)
    for cut in range(len(data)):  # cut anywhere, even inside the last padding
        with pytest.raises(QueryError, match="Malformed intermediate result"):
            IntermediateResult.from_bytes(data[:cut])
    with pytest.raises(QueryError, match="bytes past its last array"):
        IntermediateResult.from_bytes(data + b"\0" * 8)
    bad_header = numeric_frame.MAGIC + (5).to_bytes(4, "little") + b"{nope" + b"\0" * 3
    with pytest.raises(QueryError, match="header is malformed"):
        IntermediateResult.from_bytes(bad_header)
    objects = data.replace(b'"<i8"', b'"|O8"', 1)  # object arrays would read pointers
    assert objects != data
    with pytest.raises(QueryError, match="Malformed intermediate result"):
        IntermediateResult.from_bytes(objects)


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


@pytest.mark.parametrize("query", [
    "SELECT a, SUM(b), MIN(b) FROM t GROUP BY a",  # numeric: a numeric frame
    "SELECT a, PERCENTILE(b, 50), FIRSTWITHTIME(b, c, 'INT') FROM t GROUP BY a",  # Arrow
])  # fmt: skip
def test_states_made_with_other_null_handling_are_a_clear_error(query):
    """Null-aware states carry one more array than plain ones: a result made with
    enableNullHandling=true merged by a plan without it (or the reverse) is refused with a
    message that says so, never a Python unpacking error or a wrong answer."""
    plain = compile_query(query)
    with_nulls = dataclasses.replace(plain, options={"enableNullHandling": "true"})
    for made, merged_by in ((with_nulls, plain), (plain, with_nulls)):
        states = [fn.empty_state(2) for fn in made.aggregations]
        result = IntermediateResult("group_by", keys=[np.array([1, 2])], states=states)
        back = IntermediateResult.from_bytes(result.to_bytes(made))
        with pytest.raises(QueryError, match="enableNullHandling"):
            back.decoded_states(merged_by)
        assert len(IntermediateResult.from_bytes(result.to_bytes(made)).decoded_states(made)) == 2
