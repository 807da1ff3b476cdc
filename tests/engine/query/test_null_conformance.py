"""The null-handling conformance suite in process: every query of ``null_queries`` with
``enableNullHandling`` on and off, over the generated table built with each access path
(dictionary, raw, sorted/inverted/range indexes, star-tree, consuming segments), against
DuckDB (see ``null_conformance`` for where Pinot's semantics differ from DuckDB's)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.query import IntermediateResult, compile_query, execute_server, reduce, run_query
from engine.realtime import MutableSegment
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig
from tests.engine.query import null_conformance as nc
from tests.engine.query.null_queries import all_queries

QUERIES = all_queries()


@pytest.fixture(scope="module")
def reference():
    rows = nc.generate_rows()
    return rows, nc.Reference(rows)


def _segments(variant: str, rows: dict, out):
    schema = Schema.from_json(nc.SCHEMA)
    if variant == "consuming":
        config = TableConfig.from_json(nc.table_config("consuming", "REALTIME"))
        segments = []
        for n, (start, stop) in enumerate([(0, 150), (150, sum(nc.SEGMENT_SIZES))]):
            segment = MutableSegment(f"{nc.TABLE}__{n}__0__20260101T0000Z", schema, config)
            middle = (start + stop) // 2  # two batches: the dictionary grows between them
            segment.index(nc.arrow_rows(rows, start, middle))
            segment.index(nc.arrow_rows(rows, middle, stop))
            segments.append(segment.snapshot())
        return schema, segments
    config = TableConfig.from_json(nc.table_config(variant))
    segments = []
    for n, (start, stop) in enumerate(nc.segment_ranges()):
        table: pa.Table = nc.arrow_rows(rows, start, stop)
        built = build_segment(table, schema, config, out, segment_name=f"{variant}_{n}")
        segments.append(load_segment(built.path))
    return schema, segments


@pytest.mark.parametrize("variant", list(nc.VARIANTS))
def test_null_handling_matches_duckdb(variant, reference, tmp_path):
    rows, con = reference
    schema, segments = _segments(variant, rows, tmp_path)

    def execute(sql: str, null_handling: bool) -> dict:
        options = {"enableNullHandling": "true" if null_handling else "false"}
        return run_query(sql, segments, table_schema=schema, query_options=options)

    checks = nc.run_suite(execute, nc.TABLE, con, QUERIES)
    assert len(checks) > 800
    assert all(c.ok for c in checks), nc.failures(checks)


def test_results_cross_the_wire_between_servers_and_broker(reference, tmp_path):
    """Each segment answered as by its own server and its result serialized, then reduced as
    the broker does: NULL group keys, NULL marks and the states of aggregations that finalize
    to NULL survive the numeric frame and the Arrow stream, and merge across servers whose
    groups differ (the last segment has no value in s, f and mi)."""
    rows, con = reference
    schema, segments = _segments("indexed", rows, tmp_path)

    def execute(sql: str, null_handling: bool) -> dict:
        options = {"enableNullHandling": "true" if null_handling else "false"}
        plan = compile_query(sql, schema, options=options)
        servers = [execute_server(plan, [segment]) for segment in segments]
        return reduce(plan, [IntermediateResult.from_bytes(s.to_bytes(plan)) for s in servers])

    queries = [q for q in QUERIES if "GROUP BY" in q.pinot or "DISTINCT" in q.pinot]
    queries += [q for q in QUERIES if q.aggregations is not None]
    checks = nc.run_suite(execute, nc.TABLE, con, queries)
    assert len(checks) > 150
    assert all(c.ok for c in checks), nc.failures(checks)
