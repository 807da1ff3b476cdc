"""All 200 of Pinot's airline queries, in-process, against DuckDB (see conformance.py for
where Pinot's semantics differ from plain SQL and how the comparison follows Pinot)."""

from __future__ import annotations

import pytest

from engine.query import run_query
from tests.engine.query import conformance


@pytest.mark.slow
def test_airline_queries_match_duckdb(pinot_examples, airline_segments):
    schema, segments = airline_segments
    checks = conformance.run_conformance(
        lambda sql: run_query(sql, segments, table_schema=schema), "airlineStats", pinot_examples
    )
    failed = [c for c in checks if not c.ok]
    assert len(checks) == 200
    assert not failed, f"{len(failed)} of 200 differ:\n" + "\n".join(
        f"{c.sql}\n  -> {c.message}" for c in failed[:10]
    )
