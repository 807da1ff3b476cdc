"""Production operations through real processes (issue 26, items 4-8): a controller, two
servers and a broker on a real ZooKeeper, with a ``scan`` table whose raw string column makes
a REGEXP_LIKE filter scan every row of every segment (no index, nothing cached), so a query
runs long enough for a cancel to arrive mid-scan.

Figures (the cancellation's stop time) are printed; run with ``-s`` to see them."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator

import psutil
import pyarrow as pa
import pytest
import requests

from bench.cancel import LONG_SCAN, SCAN_CONFIG, SCAN_SCHEMA, scan_rows, scan_tars
from tests.cluster_e2e.conftest import (
    Cluster,
    start_cluster,
    stop_cluster,
    upload_tar,
    wait_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCAN = "scan"
SEGMENTS, ROWS_PER_SEGMENT = 16, 100_000
QUERY_LOG_RATE_KEY, QUERY_LOG_RATE = "pinot.broker.query.log.maxRatePerSecond", 5


@pytest.fixture(scope="module")
def ops(zookeeper, tmp_path_factory) -> Iterator[Cluster]:
    """The cluster with the scan table loaded (SEGMENTS segments over the two servers)."""
    workdir = tmp_path_factory.mktemp("ops")
    broker_config = workdir / "broker.conf"
    broker_config.write_text(  # Pinot's broker keys, as a Pinot broker reads them
        f"{QUERY_LOG_RATE_KEY}={QUERY_LOG_RATE}\npinot.broker.request.client.ip.logging=true\n"
    )
    cluster = start_cluster(zookeeper.address, workdir,
                            extra_env={"SPRIG_BROKER_CONFIG": str(broker_config)})  # fmt: skip
    try:
        for path, body in (("/schemas", SCAN_SCHEMA), ("/tables", SCAN_CONFIG)):
            response = cluster.controller("POST", path, json=body)
            assert response.ok, f"POST {path}: {response.status_code} {response.text}"
        for tar in scan_tars(workdir, SEGMENTS, ROWS_PER_SEGMENT):
            upload_tar(cluster, SCAN, tar)
        wait_rows(cluster, SCAN, SEGMENTS * ROWS_PER_SEGMENT)
        yield cluster
    finally:
        stop_cluster(cluster)


class _Background:
    """A query sent from a thread; ``answered_at`` is the monotonic time its answer came."""

    def __init__(self, cluster: Cluster, sql: str, **options) -> None:
        self.answer: dict | None = None
        self.answered_at: float | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(cluster, sql, options))
        self._thread.start()

    def _run(self, cluster: Cluster, sql: str, options: dict) -> None:
        try:
            self.answer = cluster.query(sql, timeout=120, **options)
        except BaseException as exc:  # re-raised by join()
            self.error = exc
        self.answered_at = time.monotonic()

    def join(self, timeout_s: float = 120) -> dict:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the query never came back"
        if self.error is not None:
            raise self.error
        return self.answer


def _running_id(cluster: Cluster, sql: str, timeout_s: float = 10) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listing = requests.get(f"{cluster.broker_url}/queries", timeout=5).json()
        found = [qid for qid, text in listing.items() if text == sql]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"the broker never listed the query as running: {listing}")


def _server_cpu_s(cluster: Cluster) -> float:
    return sum(sum(psutil.Process(p.pid).cpu_times()[:2]) for p in cluster.servers.values())


def _servers_idle_after(cluster: Cluster, settle_s: float = 0.05) -> float:
    """CPU seconds the servers spent over the 0.4 s after ``settle_s``: near zero once their
    work stopped (the idle loops cost a few ms per second)."""
    time.sleep(settle_s)
    before = _server_cpu_s(cluster)
    time.sleep(0.4)
    return _server_cpu_s(cluster) - before


def test_long_scan_is_long_and_correct(ops):
    """The scan used below: exact against a numpy count, and long (seconds), so a cancel
    100 ms in lands mid-scan."""
    import re

    started = time.monotonic()
    answer = ops.query(LONG_SCAN, timeout=120, timeoutMs=60_000)
    elapsed = time.monotonic() - started
    assert not answer["exceptions"], answer["exceptions"]
    pattern = re.compile("a.*b|c.*d|e.*f|g.*h.*i")
    expected = sum(
        sum(1 for s in scan_rows(i, ROWS_PER_SEGMENT).column("s").to_pylist() if pattern.search(s))
        for i in range(SEGMENTS)
    )
    assert answer["resultTable"]["rows"] == [[expected]]
    print(f"\nthe long scan, uncancelled: {elapsed * 1000:.0f} ms")
    assert elapsed > 0.5, "the scan is too short to be cancelled mid-way"


def test_cancel_by_client_query_id_stops_the_servers_within_100ms(ops):
    """A cancel that arrives mid-scan: the broker tells both servers, they stop at their next
    checkpoint, and the answer is QUERY_CANCELLATION (503). The figure: from sending the
    DELETE to the query's answer reaching the client, over 3 cancels."""
    figures = []
    for attempt in range(3):
        client_id = f"scan-{attempt}"
        query = _Background(ops, LONG_SCAN, clientQueryId=client_id, timeoutMs=60_000)
        request_id = _running_id(ops, LONG_SCAN)
        time.sleep(0.3)  # mid-scan
        sent = time.monotonic()
        response = requests.delete(
            f"{ops.broker_url}/query/{client_id}",
            params={"client": "true", "verbose": "true"}, timeout=10,
        )  # fmt: skip
        answer = query.join()
        figures.append((query.answered_at - sent) * 1000)
        assert response.status_code == 200, response.text
        assert response.text.startswith(f"Cancelled query: {request_id} with responses from")
        assert response.text.count("=200") == 2, response.text  # both servers were running it
        codes = {e["errorCode"] for e in answer["exceptions"]}
        assert 503 in codes, answer["exceptions"]
        assert any("Cancelled on: Server_" in e["message"] for e in answer["exceptions"])
        assert answer["requestId"] == request_id
        idle_cpu = _servers_idle_after(ops)
        assert idle_cpu < 0.1, f"the servers kept working after the cancel: {idle_cpu:.3f} s"
        assert request_id not in requests.get(f"{ops.broker_url}/queries", timeout=5).json()
    print(f"\ncancel -> answer at the client: {', '.join(f'{f:.1f}' for f in figures)} ms "
          f"(median {statistics.median(figures):.1f} ms, target <= 100 ms)")  # fmt: skip
    assert statistics.median(figures) <= 100, figures


def test_cancel_through_the_controller(ops):
    """The controller's GET /queries lists the query under its broker; DELETE
    /query/{broker}/{id} cancels it there; unknown and malformed ids are 404 and 400."""
    query = _Background(ops, LONG_SCAN, timeoutMs=60_000)
    request_id = _running_id(ops, LONG_SCAN)
    listing = ops.controller("GET", "/queries").json()
    (broker_id,) = [b for b, queries in listing.items() if request_id in queries]
    assert listing[broker_id][request_id] == LONG_SCAN
    response = ops.controller("DELETE", f"/query/{broker_id}/{request_id}")
    assert response.status_code == 200 and response.text == f"Cancelled query: {request_id}"
    answer = query.join()
    assert 503 in {e["errorCode"] for e in answer["exceptions"]}
    missing = ops.controller("DELETE", f"/query/{broker_id}/{request_id}")
    assert missing.status_code == 404
    assert missing.json()["error"] == f"Query: {request_id} not found on the broker"
    bad = requests.delete(f"{ops.broker_url}/query/abc", timeout=5)
    assert bad.status_code == 400 and bad.json()["error"] == "Invalid internal query id: abc"
    gone = ops.controller("DELETE", "/clientQuery/nobody-runs-this")
    assert gone.status_code == 404
    assert gone.json()["error"] == "Client query: nobody-runs-this not found on any broker"
    no_broker = ops.controller("DELETE", "/query/Broker_nowhere_1/5")
    assert no_broker.status_code == 404


def test_timeout_stops_the_servers_work_the_same_way(ops):
    """timeoutMs ends the scan on the servers at the deadline (the same token), not when the
    scan would have finished: the answer comes near the deadline and the servers go idle."""
    started = time.monotonic()
    answer = ops.query(LONG_SCAN, timeout=60, timeoutMs=400)
    elapsed_ms = (time.monotonic() - started) * 1000
    codes = {e["errorCode"] for e in answer["exceptions"]}
    assert codes & {250, 427}, answer["exceptions"]  # the servers' timeout, or the broker's
    assert elapsed_ms < 400 + 300, f"answered {elapsed_ms:.0f} ms after a 400 ms timeout"
    idle_cpu = _servers_idle_after(ops, settle_s=0.1)
    assert idle_cpu < 0.1, f"the servers kept scanning past the deadline: {idle_cpu:.3f} s"
    print(f"\ntimeoutMs=400: answered after {elapsed_ms:.0f} ms with {sorted(codes)}")


# --- schema evolution (item 6) ------------------------------------------------------------
EVOLVE_SCHEMA = {
    "schemaName": "evolve",
    "enableColumnBasedNullHandling": True,
    "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "amount", "dataType": "INT"}],
}
EVOLVE_CONFIG = {"tableName": "evolve", "tableType": "OFFLINE",
                 "segmentsConfig": {"replication": "1", "schemaName": "evolve"}}  # fmt: skip
EVOLVED_SQL = "SELECT region, code, COUNT(*) FROM evolve GROUP BY region, code ORDER BY 3"


def _upload_rows(cluster: Cluster, schema_json: dict, rows: pa.Table, name: str, workdir) -> None:
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    built = build_segment(rows, Schema.from_json(schema_json),
                          TableConfig.from_json(EVOLVE_CONFIG), workdir / "built",
                          segment_name=name)  # fmt: skip
    upload_tar(cluster, "evolve", pack_segment(built.path, workdir / f"{name}.tar.gz"))


def _until(check, what: str, timeout_s: float = 30):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: never true, last {last}")


def test_schema_evolution_added_columns_need_no_reload(ops, tmp_path):
    """Columns added to the schema read as their defaults in older segments at once (no
    unknown-column error), NULL with null handling where the column is nullable; needReload
    says a reload would write them; after it, the same answers and needReload false. A
    forbidden change is refused with Pinot's message."""
    for path, body in (("/schemas", EVOLVE_SCHEMA), ("/tables", EVOLVE_CONFIG)):
        assert ops.controller("POST", path, json=body).ok
    for i in range(2):
        rows = pa.table({"city": ["a", "b", "c"], "amount": pa.array([1, 2, i], pa.int32())})
        _upload_rows(ops, EVOLVE_SCHEMA, rows, f"evolve_{i}", tmp_path)
    wait_rows(ops, "evolve", 6)
    evolved = {**EVOLVE_SCHEMA, "dimensionFieldSpecs": [
        *EVOLVE_SCHEMA["dimensionFieldSpecs"],
        {"name": "region", "dataType": "STRING"},
        {"name": "code", "dataType": "INT", "notNull": True, "defaultNullValue": 5},
    ]}  # fmt: skip
    response = ops.controller("PUT", "/schemas/evolve", json=evolved)
    assert response.status_code == 200, response.text

    def answer(**options):
        out = ops.query(EVOLVED_SQL, **options)
        return out if not out["exceptions"] else None

    plain = _until(answer, "the new columns answer")
    assert plain["resultTable"]["rows"] == [["null", 5, 6]]
    nulls = ops.query(EVOLVED_SQL, enableNullHandling="true")
    assert nulls["resultTable"]["rows"] == [[None, 5, 6]], nulls
    counted = ops.query("SELECT COUNT(region), COUNT(code) FROM evolve", enableNullHandling="true")
    assert counted["resultTable"]["rows"] == [[0, 6]]

    need = ops.controller("GET", "/segments/evolve_OFFLINE/needReload", params={"verbose": "true"})
    assert need.status_code == 200 and need.json()["needReload"] is True, need.text
    assert any(e["needReload"] for e in need.json()["serverToSegmentsCheckReloadList"].values())
    reload = ops.controller("POST", "/segments/evolve/reload")
    assert reload.status_code == 200, reload.text
    _until(lambda: not ops.controller("GET", "/segments/evolve_OFFLINE/needReload").json()[
        "needReload"], "needReload false after the reload")  # fmt: skip
    assert ops.query(EVOLVED_SQL)["resultTable"]["rows"] == [["null", 5, 6]]
    assert ops.query(EVOLVED_SQL, enableNullHandling="true")["resultTable"]["rows"] == [
        [None, 5, 6]
    ]

    # a segment built with the new schema holds real values beside the written defaults
    rows = pa.table({"city": ["d"], "amount": pa.array([9], pa.int32()), "region": ["west"],
                     "code": pa.array([7], pa.int32())})  # fmt: skip
    _upload_rows(ops, evolved, rows, "evolve_2", tmp_path)
    wait_rows(ops, "evolve", 7)
    assert ops.query(EVOLVED_SQL)["resultTable"]["rows"] == [["west", 7, 1], ["null", 5, 6]]

    retyped = {**evolved, "metricFieldSpecs": [{"name": "amount", "dataType": "LONG"}]}
    refused = ops.controller("PUT", "/schemas/evolve", json=retyped)
    assert refused.status_code == 400
    assert refused.json()["error"].startswith(
        "Backward incompatible schema evolve. Reason: New schema: evolve is not "
        "backward-compatible with the existing schema."
    )
    assert "amount (old: METRIC INT, new: METRIC LONG)" in refused.json()["error"]
    assert (
        ops.controller("GET", "/schemas/evolve").json()["metricFieldSpecs"][0]["dataType"] == "INT"
    )


# --- query log (item 5) and Pinot's metric names (item 8) ----------------------------------
def _completion_lines(cluster: Cluster) -> list[str]:
    text = cluster.broker.log_path.read_text()
    return [line.split("QueryLogger: ", 1)[1] for line in text.splitlines()
            if "QueryLogger: requestId=" in line]  # fmt: skip


def test_query_log_lines_and_their_rate_limit(ops):
    """Each answered query is one line with Pinot's fields in Pinot's order; over
    maxRatePerSecond (5 here) lines are dropped, and counted, except a failed query's."""
    time.sleep(1.1)  # a full bucket
    headers = {"X-Forwarded-For": "10.1.2.3"}
    response = requests.post(f"{ops.broker_url}/query/sql", headers=headers, timeout=30,
                             json={"sql": f"SELECT COUNT(*) FROM {SCAN} WHERE k < 10"})  # fmt: skip
    answer = response.json()
    request_id = answer["requestId"]
    (line,) = [x for x in _completion_lines(ops) if x.startswith(f"requestId={request_id},")]
    fields = [part.split("=", 1)[0].split(":", 1)[0] for part in line.split(",")]
    assert fields[:9] == ["requestId", "table", "queryHash", "timeMs", "docs", "entries",
                          "segments(queried/processed/matched/consumingQueried/consumingProcessed/"
                          "consumingMatched/unavailable)", "consumingFreshnessTimeMs", "servers"]  # fmt: skip
    assert fields[-1] == "query" and line.endswith(
        f"query=SELECT COUNT(*) FROM {SCAN} WHERE k < 10"
    )
    assert f"table={SCAN}," in line
    assert f"docs={answer['numDocsScanned']}/{answer['totalDocs']}," in line
    assert f":{SEGMENTS}/{SEGMENTS}/" in line and ",servers=2/2," in line
    assert ",clientIp=10.1.2.3," in line and ",queryEngine=singleStage," in line
    assert "serverStats=(Server=SubmitDelayMs,ResponseDelayMs,ResponseSize," in line
    log_text = ops.broker.log_path.read_text()
    assert f"SQL query for request {request_id}: SELECT COUNT(*)" in log_text

    burst = [ops.query(f"SELECT COUNT(*) FROM {SCAN} WHERE k = {i}")["requestId"]
             for i in range(30)]  # fmt: skip
    failed = ops.query(LONG_SCAN, timeoutMs=5)["requestId"]  # partial: logged over the rate
    time.sleep(1.1)
    ops.query(f"SELECT COUNT(*) FROM {SCAN}")  # reports what was dropped
    logged = {x.split(",", 1)[0].removeprefix("requestId=") for x in _completion_lines(ops)}
    kept = [r for r in burst if r in logged]
    assert 3 <= len(kept) < len(burst), (len(kept), len(burst))
    assert failed in logged
    assert "logs were dropped. (log max rate per second: 5)" in ops.broker.log_path.read_text()


def _series(url: str) -> dict[str, float]:
    out = {}
    for line in requests.get(url, timeout=10).text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_pinot_metric_names(ops):
    """The broker and servers export Pinot's JMX-exporter names beside the sprig_* ones."""
    before = _series(f"{ops.broker_url}/metrics")
    for _ in range(3):
        ops.query(f"SELECT COUNT(*) FROM {SCAN} WHERE k = 1")
    broker = _series(f"{ops.broker_url}/metrics")
    table = f'{{table="{SCAN}"}}'
    assert (
        broker[f"pinot_broker_queries_Count{table}"]
        == before[f"pinot_broker_queries_Count{table}"] + 3
    )
    assert (
        broker["pinot_broker_queriesGlobal_Count"] >= broker[f"pinot_broker_queries_Count{table}"]
    )
    for phase in (
        "requestCompilation",
        "queryRouting",
        "scatterGather",
        "reduce",
        "queryExecution",
    ):
        assert broker[f"pinot_broker_{phase}_Count{table}"] >= 3
        assert broker[f"pinot_broker_{phase}_99thPercentile{table}"] >= 0
    assert broker["pinot_broker_queryTotalTimeMs_50thPercentile"] > 0
    assert "pinot_broker_brokerResponsesWithProcessingExceptions_Count" in broker
    assert broker[f"sprig_broker_queries_total{table}"] >= 3  # the older names stay
    docs = 0
    for admin in _admin_urls(ops):
        server = _series(f"{admin}/metrics")
        assert server["pinot_server_queries_Count"] > 0
        docs += server['pinot_server_documentCount_Value{table="scan",tableType="OFFLINE"}']
    assert docs == SEGMENTS * ROWS_PER_SEGMENT


def _admin_urls(cluster: Cluster) -> list[str]:
    instances = cluster.controller("GET", "/instances").json()["instances"]
    urls = []
    for name in instances:
        if name.startswith("Server_"):
            info = cluster.controller("GET", f"/instances/{name}").json()
            urls.append(f"http://{info['hostName']}:{info['adminPort']}")
    return urls
