"""Cooperative stopping of a query's work (engine.common.cancel): a cancel or the deadline
stops the segments at their next checkpoint, in the request thread and in the pool; a scan
evaluated in slices between checkpoints answers as one evaluation."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from engine.query import run_query
from engine.query.errors import QueryCancelledError, QueryTimeoutError
from engine.query.filter import SCAN_SLICE_ROWS
from engine.query.runner import QueryEngine, QueryToken
from engine.query.settings import QuerySettings
from engine.segment import build_segment, load_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

SCHEMA = {"schemaName": "scan", "dimensionFieldSpecs": [{"name": "s", "dataType": "STRING"}],
          "metricFieldSpecs": [{"name": "v", "dataType": "DOUBLE"}]}  # fmt: skip
CONFIG = {"tableName": "scan", "tableType": "OFFLINE", "segmentsConfig": {"replication": "1"},
          "tableIndexConfig": {"noDictionaryColumns": ["s", "v"]}}  # fmt: skip
SLOW = "SELECT COUNT(*) FROM scan WHERE REGEXP_LIKE(s, 'a.*b') OR REGEXP_LIKE(s, 'c.*d')"


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    out = tmp_path_factory.mktemp("scan")
    rng = np.random.default_rng(5)
    letters = np.array(list("abcdefgh"))
    built = []
    for i in range(6):
        n = SCAN_SLICE_ROWS * 2 + 1000  # three slices per predicate
        words = ["".join(w) for w in rng.choice(letters, (n, 10))]
        rows = pa.table({"s": words, "v": rng.random(n)})
        result = build_segment(rows, Schema.from_json(SCHEMA), TableConfig.from_json(CONFIG),
                               out, segment_name=f"scan_{i}")  # fmt: skip
        built.append(load_segment(result.path))
    return built


def test_a_sliced_scan_answers_as_a_whole_one(segments):
    pattern = re.compile("a.*b|c.*d")
    expected = sum(
        sum(1 for s in seg.column("s").values() if pattern.search(s)) for seg in segments
    )
    assert run_query(SLOW, segments)["resultTable"]["rows"] == [[expected]]


@pytest.mark.parametrize("parallel", [False, True])
def test_a_cancel_stops_the_segments_at_the_next_checkpoint(segments, parallel):
    engine = QueryEngine(QuerySettings(threads=2, parallel_min_segment_ms=0))
    plan = engine.compile(SLOW, Schema.from_json(SCHEMA))
    started = time.monotonic()
    engine.execute_server(plan, segments, parallel=parallel)
    whole = time.monotonic() - started
    token = QueryToken(plan.timeout_ms, time.monotonic() + 60, "here")
    timer = threading.Timer(whole / 3, token.cancel)
    timer.start()
    with pytest.raises(QueryCancelledError, match="Cancelled on: here"):
        engine.execute_server(plan, segments, parallel=parallel, token=token)
    stopped_ms = (time.monotonic() - token.cancelled_at) * 1000
    engine.close()
    print(f"\nuncancelled {whole * 1000:.0f} ms; stopped {stopped_ms:.1f} ms after the cancel")
    assert stopped_ms < 100, stopped_ms


def test_the_deadline_stops_the_work_the_same_way(segments):
    engine = QueryEngine(QuerySettings(threads=2))
    plan = engine.compile(SLOW, Schema.from_json(SCHEMA))
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError) as raised:
        engine.execute_server(plan, segments, deadline=started + 0.05)
    assert (time.monotonic() - started) < 0.05 + 0.1
    assert raised.value.to_exception()["errorCode"] == 250
    engine.close()


def test_a_cancelled_query_is_503_in_a_response(segments):
    error = QueryCancelledError("Cancelled on: Server_x")
    assert error.to_exception() == {"errorCode": 503, "message": "Cancelled on: Server_x"}
