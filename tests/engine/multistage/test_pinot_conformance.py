"""Pinot's own multi-stage query tests, through a real controller, broker and two servers.

Every table of every case is created once for the session (Pinot schema and table config
through the controller, rows as segments split over the two servers), then each live query
goes to the broker's multi-stage endpoint (``POST /query``) with ``enableNullHandling=true``
unless it sets it. A query with ``outputs`` is compared with them, one without with DuckDB
on the same rows, and one with ``expectedException`` must fail; all under Pinot's rules
(``pinot_cases.same_rows``). The results go to ``test-artifacts/mse-conformance.json``;
the pass rate must stay at or above ``MIN_PASS_RATE``.
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from tests.conftest import REPO_ROOT
from tests.engine.multistage import pinot_cases as pc

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CASES_DIR = REPO_ROOT.parent / "shared" / "pinot-mse-queries"
# the target is 0.95; 1291/1316 (98.1%) pass now: of the 25 left, 21 need BIG_DECIMAL
# values past decimal128(38, 18) and 4 are Pinot behaviour not copied (the closing notes of
# issue 25 say which and why)
MIN_PASS_RATE = 0.97
TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def mse_cluster(zookeeper, tmp_path_factory):
    from tests.cluster_e2e.conftest import start_cluster, stop_cluster

    cluster = start_cluster(zookeeper.address, tmp_path_factory.mktemp("mse"))
    try:
        cases = pc.load_cases(CASES_DIR)
        load_tables(cluster, cases, tmp_path_factory.mktemp("mse-segments"))
        yield cluster, cases
    finally:
        stop_cluster(cluster)


def load_tables(cluster, cases, out: Path) -> None:
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig
    from tests.cluster_e2e.conftest import upload_tar

    jobs = []
    for case in cases:
        for short, table in case.tables.items():
            name = f"{case.name}_{short}"
            schema_json = pc.pinot_schema(name, table, case.column_null_handling)
            config_json = pc.pinot_table_config(name, table)
            for path, body in (("/schemas", schema_json), ("/tables", config_json)):
                r = cluster.controller("POST", path, json=body)
                assert r.ok, f"{name}: POST {path}: {r.status_code} {r.text}"
            schema, config = Schema.from_json(schema_json), TableConfig.from_json(config_json)
            parts = [[pc.record(table, row, TS) for row in rows] for rows in pc.segments_of(table)]
            arrow_schema = pc.arrow_schema(table)
            for i, part in enumerate(parts):
                if not part:
                    continue
                try:
                    data = pa.Table.from_pylist(part, schema=arrow_schema)
                    built = build_segment(data, schema, config, out / name,
                                          segment_name=f"{name}_{i}")  # fmt: skip
                except Exception as exc:  # e.g. a BIG_DECIMAL past 38 digits: its queries fail
                    print(f"cannot load {name}: {exc}")
                    continue
                jobs.append((name, pack_segment(built.path, out / f"{name}_{i}.tar.gz")))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda job: upload_tar(cluster, job[0], job[1]), jobs))
    wait_online(cluster, {name for name, _ in jobs}, len(jobs))


def wait_online(cluster, tables: set[str], expected: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        online = 0
        for table in tables:
            view = cluster.controller("GET", f"/tables/{table}/externalview").json() or {}
            online += sum(1 for m in (view.get("OFFLINE") or {}).values()
                          if "ONLINE" in m.values())  # fmt: skip
        if online >= expected:
            time.sleep(1.0)  # the broker's routing follows the external view
            return
        time.sleep(0.5)
    raise AssertionError(f"only {online} of {expected} segments came ONLINE")


def run_query(cluster, query: pc.Query) -> dict:
    options = "" if re.search(r"enableNullHandling", query.sql, re.I) else "enableNullHandling=true"
    body = {"sql": query.sql, "queryOptions": options}
    return requests.post(f"{cluster.broker_url}/query", json=body, timeout=60).json()


def check(query: pc.Query, answer: dict, reference) -> str | None:
    """None when the query passes, else why not."""
    failed = answer.get("exceptions") and "resultTable" not in answer
    if query.expected_exception:
        return None if failed else "expected an error, got rows"
    if failed:
        return "error: " + answer["exceptions"][0]["message"][:300]
    table = answer["resultTable"]
    types = table["dataSchema"]["columnDataTypes"]
    if query.outputs is not None:
        return pc.same_rows(table["rows"], query.outputs, types, query.keep_order)
    try:
        expected = [list(r) for r in reference.execute(pc.duckdb_sql(query)).fetchall()]
    except Exception as exc:  # the reference cannot run it: counted, with the reason
        return f"reference failed: {str(exc).splitlines()[0][:200]}"
    return pc.same_rows(table["rows"], expected, types, query.keep_order)


def reference_db(cases):
    import duckdb

    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    con.execute("SET TimeZone = 'America/Los_Angeles'")
    for case in cases:
        for short, table in case.tables.items():
            try:
                pc.duckdb_load(con, f"{case.name}_{short}", table, TS)
            except Exception:  # e.g. a DECIMAL past DuckDB's range: those queries fail
                continue
    return con


@pytest.mark.timeout(1200)  # 171 tables to load and 1316 queries: slow on a busy machine
def test_pinot_multistage_queries(mse_cluster):
    cluster, cases = mse_cluster
    reference = reference_db(cases)
    queries = [q for case in cases for q in case.queries]
    results = {}
    for query in queries:
        try:
            answer = run_query(cluster, query)
            results[query.id] = check(query, answer, reference)
        except requests.RequestException as exc:
            results[query.id] = f"request failed: {exc}"
    failures = {k: v for k, v in results.items() if v is not None}
    passed = len(results) - len(failures)
    artifacts = REPO_ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "mse-conformance.json").write_text(json.dumps({
        "queries": len(results), "passed": passed, "failures": failures,
    }, indent=1))  # fmt: skip
    rate = passed / len(results)
    assert rate >= MIN_PASS_RATE, f"{passed}/{len(results)} passed ({rate:.1%}); see test-artifacts"
