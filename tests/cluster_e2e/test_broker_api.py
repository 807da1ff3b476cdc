"""The broker's HTTP API over a real cluster: Pinot's request/response shapes, the debug
endpoints, the real pinotdb client (DB-API and SQLAlchemy), and bad input."""

from __future__ import annotations

import pinotdb
import pytest
import requests
from sqlalchemy import create_engine, inspect, text

from tests.cluster_e2e.conftest import TABLE

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_count_matches_the_data_and_reports_pinot_statistics(cluster):
    response = cluster.query(f"SELECT COUNT(*) FROM {TABLE}")
    assert response["resultTable"]["rows"] == [[cluster.total_rows]]
    assert response["resultTable"]["dataSchema"]["columnDataTypes"] == ["LONG"]
    assert response["exceptions"] == []
    assert response["partialResult"] is False
    assert response["numServersQueried"] == 2
    assert response["numServersResponded"] == 2
    assert response["numSegmentsQueried"] == len(cluster.segments)
    assert response["totalDocs"] == cluster.total_rows
    assert isinstance(response["timeUsedMs"], int)


def test_get_and_query_options(cluster):
    got = requests.get(
        f"{cluster.broker_url}/query/sql",
        params={"sql": f"SELECT Carrier, COUNT(*) FROM {TABLE} GROUP BY Carrier "
                       "ORDER BY COUNT(*) DESC LIMIT 3", "queryOptions": "timeoutMs=5000"},
        timeout=30,
    ).json()  # fmt: skip
    assert len(got["resultTable"]["rows"]) == 3
    assert got["resultTable"]["dataSchema"]["columnNames"] == ["Carrier", "count(*)"]


def test_time_pruning_at_the_broker(cluster):
    day = cluster.query(f"SELECT MIN(DaysSinceEpoch) FROM {TABLE}")["resultTable"]["rows"][0][0]
    response = cluster.query(f"SELECT COUNT(*) FROM {TABLE} WHERE DaysSinceEpoch = {int(day)}")
    assert response["numSegmentsQueried"] == 1
    assert response["numSegmentsPrunedByBroker"] == len(cluster.segments) - 1
    assert response["resultTable"]["rows"][0][0] > 0


def test_routing_table_spreads_segments_over_both_servers(cluster):
    table = requests.get(f"{cluster.broker_url}/debug/routingTable/{TABLE}", timeout=10).json()
    routing = table[f"{TABLE}_OFFLINE"]
    assert set(routing) == set(cluster.servers)
    assert sorted(s for segs in routing.values() for s in segs) == sorted(cluster.segments)
    missing = requests.get(f"{cluster.broker_url}/debug/routingTable/nope", timeout=10)
    assert missing.status_code == 404
    # an OFFLINE-only table has no time boundary
    boundary = requests.get(f"{cluster.broker_url}/debug/timeBoundary/{TABLE}", timeout=10)
    assert boundary.status_code == 404
    assert "hybrid" in boundary.json()["error"]


def test_bad_requests_get_clear_errors(cluster):
    url = f"{cluster.broker_url}/query/sql"
    not_json = requests.post(url, data=b"{nope", timeout=10)
    assert not_json.status_code == 400
    assert "not valid JSON" in not_json.json()["exceptions"][0]["message"]
    no_sql = requests.post(url, json={"query": "x"}, timeout=10)
    assert no_sql.status_code == 400 and "'sql' is required" in no_sql.text
    unknown = cluster.query("SELECT COUNT(*) FROM noSuchTable")
    assert unknown["exceptions"][0]["errorCode"] == 190
    bad_sql = cluster.query(f"SELEC COUNT(*) FROM {TABLE}")
    assert bad_sql["exceptions"][0]["errorCode"] == 150
    bad_column = cluster.query(f"SELECT nope FROM {TABLE}")
    assert bad_column["exceptions"][0]["errorCode"] == 710
    assert requests.get(f"{cluster.broker_url}/nothing", timeout=10).status_code == 404
    assert requests.get(f"{cluster.broker_url}/health", timeout=10).text == "OK"


def test_pinotdb_dbapi(cluster):
    conn = pinotdb.connect(host="127.0.0.1", port=cluster.broker_port, path="/query/sql",
                           scheme="http")  # fmt: skip
    cursor = conn.cursor()
    cursor.execute(f"SELECT Carrier, COUNT(*) AS n FROM {TABLE} GROUP BY Carrier "
                   "ORDER BY n DESC LIMIT 5")  # fmt: skip
    rows = cursor.fetchall()
    assert len(rows) == 5
    assert [d[0] for d in cursor.description] == ["Carrier", "n"]
    assert sum(r[1] for r in rows) <= cluster.total_rows


def test_pinotdb_sqlalchemy_dialect(cluster):
    engine = create_engine(
        f"pinot://127.0.0.1:{cluster.broker_port}/query/sql?controller={cluster.controller_url}/"
    )
    inspector = inspect(engine)
    assert TABLE in inspector.get_table_names()
    columns = {c["name"] for c in inspector.get_columns(TABLE)}
    assert {"Carrier", "DaysSinceEpoch", "ArrDelay"} <= columns
    with engine.connect() as connection:
        count = connection.execute(text(f"SELECT COUNT(*) FROM {TABLE}")).scalar()
    assert count == cluster.total_rows


def test_server_admin_api_and_metrics(cluster):
    import re

    process = next(iter(cluster.servers.values()))
    admin_port = int(re.search(r"--admin-port', '(\d+)", str(process.argv)).group(1))
    admin = f"http://127.0.0.1:{admin_port}"
    segments = requests.get(f"{admin}/segments", timeout=10).json()
    hosted = segments["tables"][f"{TABLE}_OFFLINE"]
    assert len(hosted) == len(cluster.segments)
    assert {s["state"] for s in hosted} == {"ONLINE"}
    metrics = requests.get(f"{admin}/metrics", timeout=10).text
    assert "sprig_server_queries_total" in metrics
    assert "sprig_server_docs_scanned_total" in metrics
    assert 'sprig_server_segments{state="ONLINE"}' in metrics
    broker_metrics = requests.get(f"{cluster.broker_url}/metrics", timeout=10).text
    assert "sprig_broker_query_latency_seconds_bucket" in broker_metrics


def test_airline_conformance_through_the_broker(cluster, pinot_examples):
    """The same 200-query suite as in-process (tests/engine/query), through broker+servers."""
    from tests.engine.query import conformance

    checks = conformance.run_conformance(lambda sql: cluster.query(sql), TABLE, pinot_examples)
    failed = [c for c in checks if not c.ok]
    assert len(checks) == 200
    assert not failed, f"{len(failed)} of 200 differ:\n" + "\n".join(
        f"{c.sql}\n  -> {c.message}" for c in failed[:10]
    )


def test_a_query_over_its_timeout_returns_an_error_not_a_hang(cluster):
    import time

    started = time.monotonic()
    response = cluster.query(f"SELECT Carrier, COUNT(*) FROM {TABLE} GROUP BY Carrier",
                             timeoutMs=1)  # fmt: skip
    assert time.monotonic() - started < 5
    assert response["exceptions"], response
    assert response["partialResult"] is True
    assert {e["errorCode"] for e in response["exceptions"]} <= {250, 427}
    # the servers are healthy again right after: the next query is complete
    assert not cluster.wait_broker_sees(cluster.total_rows)["exceptions"]


def test_explain_plan_through_the_broker(cluster):
    response = cluster.query(
        f"EXPLAIN PLAN FOR SELECT Carrier, COUNT(*) FROM {TABLE} WHERE Month = 1 GROUP BY Carrier"
    )
    assert response["exceptions"] == []
    table = response["resultTable"]
    assert table["dataSchema"]["columnNames"] == ["Operator", "Operator_Id", "Parent_Id"]
    operators = [row[0] for row in table["rows"]]
    assert operators[0].startswith("BROKER_REDUCE") and operators[1] == "COMBINE_GROUP_BY"
    counts = [int(o.split(":")[1].rstrip(")")) for o in operators if o.startswith("PLAN_START")]
    assert sum(counts) == len(cluster.segments)
    assert any(o.startswith("GROUP_BY") for o in operators)
