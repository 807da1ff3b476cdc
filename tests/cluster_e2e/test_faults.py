"""Faults on a real cluster: a server SIGKILLed during a query loop (replication 2), a broker
restart, and a segment that fails to load. Each module gets its own cluster."""

from __future__ import annotations

import signal
import threading
import time

import orjson
import pyarrow as pa
import pytest
import requests
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStore, SegmentState, SegmentZKMetadata
from tests.cluster_e2e.conftest import TABLE
from tests.engine.query import conformance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COUNT = f"SELECT COUNT(*) FROM {TABLE}"


def _admin_url(process) -> str:
    argv = process.argv
    return f"http://127.0.0.1:{argv[argv.index('--admin-port') + 1]}"


def test_a_killed_server_gives_partial_results_then_full_ones_and_rejoins(cluster):
    victim_id, victim = sorted(cluster.servers.items())[0]
    results: list[tuple[float, float, dict]] = []
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            sent = time.monotonic()
            response = cluster.query(COUNT, timeout=20, timeoutMs=5000)
            results.append((sent, time.monotonic(), response))

    worker = threading.Thread(target=loop)
    worker.start()
    try:
        time.sleep(1.0)
        killed_at = time.monotonic()
        victim.popen.send_signal(signal.SIGKILL)
        victim.popen.wait(10)
        time.sleep(6.0)
    finally:
        stop.set()
        worker.join(30)
    assert not worker.is_alive(), "a query hung"
    after_kill = [(s, e, r) for s, e, r in results if s > killed_at]
    assert len(after_kill) > 10
    for sent, ended, response in results:
        assert ended - sent < 6.0, "a query took longer than its timeout"
        count = response["resultTable"]["rows"][0][0]
        if response["exceptions"]:
            assert response["partialResult"] is True
            assert any(victim_id in e["message"] for e in response["exceptions"]), response
            assert count < cluster.total_rows
        else:
            assert count == cluster.total_rows
    # once the broker noticed (within a few seconds), every answer is complete
    settled = [r for s, _, r in after_kill if s > killed_at + 3.0]
    assert settled
    assert all(r["resultTable"]["rows"][0][0] == cluster.total_rows for r in settled)
    assert all(not r["exceptions"] for r in settled)

    # restart: it reloads its segments from its data dir and takes load again
    victim.start()
    victim.wait_ready()
    cluster.wait_all_online(replicas=2)
    hosted = requests.get(f"{_admin_url(victim)}/segments", timeout=10).json()
    assert len(hosted["tables"][f"{TABLE}_OFFLINE"]) == len(cluster.segments)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = {"sql": COUNT, "trace": True}
        response = requests.post(f"{cluster.broker_url}/query/sql", json=body, timeout=10).json()
        if victim_id in response.get("traceInfo", {}) and not response["exceptions"]:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"the restarted server takes no queries: {response}")
    assert response["resultTable"]["rows"][0][0] == cluster.total_rows
    assert response["numServersResponded"] == 2


def test_a_broker_restart_rebuilds_routing_from_zookeeper(cluster):
    cluster.broker.stop()
    cluster.broker.start()
    cluster.broker.wait_ready()
    response = cluster.wait_broker_sees(cluster.total_rows)
    assert response["numServersQueried"] == 2
    table = requests.get(f"{cluster.broker_url}/debug/routingTable/{TABLE}", timeout=10).json()
    assert sorted(s for segs in table[f"{TABLE}_OFFLINE"].values() for s in segs) == sorted(
        cluster.segments
    )


@pytest.fixture
def store(cluster):
    client = KazooClient(hosts=cluster.env["SPRIG_ZK"])
    client.start(timeout=10)
    yield ClusterStore(client, cluster.env["SPRIG_CLUSTER_NAME"])
    client.stop()
    client.close()


def _wait(predicate, timeout_s=30.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_segment_that_fails_to_load_is_in_error_and_the_rest_still_serve(
    cluster, store, pinot_examples, tmp_path
):
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    resource = f"{TABLE}_OFFLINE"
    name = "airlineStats_broken_0"
    archive = tmp_path / "deep" / f"{name}.tar.gz"
    store.put_segment_metadata(SegmentZKMetadata(name, resource, crc="1", total_docs=5,
                                                 download_url=str(archive)))  # fmt: skip
    servers = sorted(cluster.servers)

    def assign(ideal):
        ideal.segments[name] = dict.fromkeys(servers, SegmentState.ONLINE.value)
        return ideal

    store.update_ideal_state(resource, assign, create=False)

    def errors():
        hosted = [
            requests.get(f"{_admin_url(p)}/segments", timeout=10).json()["tables"][resource]
            for p in cluster.servers.values()
        ]
        return [s for table in hosted for s in table if s["segmentName"] == name
                and s["state"] == "ERROR"]  # fmt: skip

    in_error = _wait(lambda: len(errors()) == 2 and errors(), what="the segment in ERROR")
    assert "no file" in in_error[0]["error"] and str(archive) in in_error[0]["error"]
    _wait(lambda: "ERROR" in (store.external_view(resource).segments.get(name) or {}).values(),
          what="ERROR in the external view")  # fmt: skip
    # the broker's routing follows the external view a moment later
    response = _wait(lambda: (r := cluster.query(COUNT))["exceptions"] and r,
                     what="the broker to see the segment in ERROR")  # fmt: skip
    assert response["resultTable"]["rows"] == [[cluster.total_rows]]  # every other segment
    assert response["partialResult"] is True
    assert (
        response["exceptions"][0]["errorCode"] == 305
        and name in response["exceptions"][0]["message"]
    )

    # the file appears; a reset (ERROR -> OFFLINE -> ONLINE) loads it
    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    rows = pa.Table.from_pylist(
        conformance.read_avro(conformance.airline_avro_files(pinot_examples)[0])[:5]
    )
    built = build_segment(rows, schema, config, tmp_path / "built", segment_name=name)
    pack_segment(built.path, archive)
    store.put_segment_metadata(SegmentZKMetadata(name, resource, crc="", total_docs=5,
                                                 download_url=str(archive)))  # fmt: skip
    reset = cluster.controller("POST", f"/segments/{TABLE}/{name}/reset")
    assert reset.ok, reset.text
    cluster.segments.append(name)
    cluster.total_rows += rows.num_rows
    cluster.wait_all_online(replicas=2)
    assert cluster.wait_broker_sees(cluster.total_rows)["exceptions"] == []

    # dropped from the ideal state -> each server deletes it
    deleted = cluster.controller("DELETE", f"/segments/{TABLE}/{name}")
    assert deleted.ok, deleted.text
    cluster.segments.remove(name)
    cluster.total_rows -= rows.num_rows
    cluster.wait_broker_sees(cluster.total_rows)
    _wait(lambda: not any(
        s["segmentName"] == name
        for p in cluster.servers.values()
        for s in requests.get(f"{_admin_url(p)}/segments", timeout=10).json()["tables"][resource]
    ), what="the servers to drop the segment")  # fmt: skip


def test_server_query_endpoint_rejects_bad_requests(cluster):
    process = next(iter(cluster.servers.values()))
    argv = process.argv
    url = f"http://127.0.0.1:{argv[argv.index('--query-port') + 1]}/query"
    bad = requests.post(url, data=b"not json", timeout=10)
    assert bad.status_code == 400 and "not JSON" in bad.json()["message"]
    no_segments = requests.post(url, data=orjson.dumps({"sql": COUNT, "tableNameWithType": "x"}),
                                timeout=10)  # fmt: skip
    assert no_segments.status_code == 400 and "'segments'" in no_segments.json()["message"]
    bad_sql = requests.post(url, data=orjson.dumps({"sql": "SELEC 1", "tableNameWithType":
                            f"{TABLE}_OFFLINE", "segments": []}), timeout=10)  # fmt: skip
    assert bad_sql.status_code == 400 and bad_sql.json()["errorCode"] == 150
