"""A server instance in-process against the real ZooKeeper: registration, segment state
transitions driven by the ideal state and by messages, the query endpoint, and
re-registration after its ZooKeeper session expires."""

from __future__ import annotations

import time
import uuid

import orjson
import pyarrow as pa
import pytest
import requests
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStore, Message, SegmentZKMetadata
from engine.query import compile_query, reduce
from engine.query.intermediate import IntermediateResult
from engine.server import ServerConfig, ServerInstance
from sprig.stack.process import free_port
from tests.engine.query import conformance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RESOURCE = "airlineStats_OFFLINE"


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def segment_tar(pinot_examples, tmp_path_factory):
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    rows = pa.Table.from_pylist(
        conformance.read_avro(conformance.airline_avro_files(pinot_examples)[0])
    )
    out = tmp_path_factory.mktemp("server-segment")
    built = build_segment(rows, schema, config, out / "built", segment_name="day0")
    return pack_segment(built.path, out / "day0.tar.gz"), rows.num_rows, str(built.metadata.crc)


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"srv_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


@pytest.fixture
def server(zookeeper, store, tmp_path):
    query_port = free_port()
    instance = ServerInstance(ServerConfig(
        zookeeper.address, store.paths.cluster_name, host="127.0.0.1", bind="127.0.0.1",
        query_port=query_port, admin_port=free_port(), data_dir=tmp_path / "data",
        session_timeout_s=4.0, resync_interval_s=1.0,
    ))  # fmt: skip
    instance.start()
    yield instance
    instance.stop()


def current_states(store, server):
    live = store.live_instances().get(server.instance_id)
    if live is None:
        return {}
    states = store.current_states(server.instance_id, live.session_id)
    return states[RESOURCE].segments if RESOURCE in states else {}


def assign(store, segments: dict[str, str], instance: str, enabled: bool = True):
    def change(ideal):
        ideal.segments = {s: {instance: state} for s, state in segments.items()}
        ideal.enabled = enabled
        return ideal

    store.update_ideal_state(RESOURCE, change)


def test_registers_with_default_tenant_tags(server, store):
    wait_for(server.healthy, what="registration")
    config = store.instance_config(server.instance_id)
    assert server.instance_id == f"Server_127.0.0.1_{server.query_http.port}"
    assert config.tags == ["DefaultTenant_OFFLINE", "DefaultTenant_REALTIME"]
    assert config.admin_port == server.admin_http.port
    assert server.instance_id in store.live_instances()


def test_follows_the_ideal_state_messages_and_a_new_session(server, store, segment_tar):
    tar, num_rows, crc = segment_tar
    store.put_segment_metadata(SegmentZKMetadata("day0", RESOURCE, crc=crc, total_docs=num_rows,
                                                 download_url=str(tar)))  # fmt: skip
    assign(store, {"day0": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="ONLINE")

    # the query endpoint answers with a mergeable intermediate result
    sql = "SELECT COUNT(*) FROM airlineStats"
    body = {"sql": sql, "tableNameWithType": RESOURCE, "segments": ["day0", "missing"]}
    url = f"http://127.0.0.1:{server.query_http.port}/query"
    response = requests.post(url, data=orjson.dumps(body), timeout=10)
    assert response.status_code == 200
    # a COUNT is a numeric state: a numeric frame, labelled as one
    assert response.headers["Content-Type"] == "application/x-sprig-numeric-frame"
    result = IntermediateResult.from_bytes(response.content)
    assert reduce(compile_query(sql), [result])["resultTable"]["rows"] == [[num_rows]]
    assert result.exceptions[0]["errorCode"] == 235 and "missing" in result.exceptions[0]["message"]
    # with a time boundary, only rows at or before it count
    body["timeBoundary"] = {"column": "DaysSinceEpoch", "op": ">", "value": 10**9}
    bounded = IntermediateResult.from_bytes(
        requests.post(url, data=orjson.dumps(body), timeout=10).content
    )
    assert reduce(compile_query(sql), [bounded])["resultTable"]["rows"] == [[0]]

    # a reload message is handled and deleted
    store.send_message(server.instance_id, Message("m1", "SEGMENT_RELOAD", RESOURCE, "day0"))
    wait_for(lambda: not store.messages(server.instance_id), what="the message to be handled")
    assert current_states(store, server) == {"day0": "ONLINE"}

    # the session expires: the server registers again and republishes its states
    old_session = store.live_instances()[server.instance_id].session_id
    killer = KazooClient(
        hosts=server.config.zk_address, client_id=server.participant.client.client_id
    )
    killer.start(timeout=10)
    killer.stop()
    killer.close()
    wait_for(lambda: (live := store.live_instances().get(server.instance_id)) is not None
             and live.session_id != old_session, what="a new session")  # fmt: skip
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="republished")

    # disabled table -> OFFLINE; removed from the ideal state -> dropped with its files
    assign(store, {"day0": "ONLINE"}, server.instance_id, enabled=False)
    wait_for(lambda: current_states(store, server) == {"day0": "OFFLINE"}, what="OFFLINE")
    assign(store, {}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {}, what="dropped")
    # after the drain (SPRIG_SERVER_DROP_DRAIN_S, see test_segment_handover.py)
    gone = lambda: not (server.config.data_dir / RESOURCE / "day0").exists()  # noqa: E731
    wait_for(gone, what="the dropped segment's files to be deleted")


def test_a_corrupt_archive_is_an_error_with_its_reason(server, store, tmp_path):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not a tar at all")
    store.put_segment_metadata(SegmentZKMetadata("bad", RESOURCE, download_url=str(broken)))
    assign(store, {"bad": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"bad": "ERROR"}, what="ERROR")
    admin = requests.get(f"http://127.0.0.1:{server.admin_http.port}/segments", timeout=10).json()
    (entry,) = admin["tables"][RESOURCE]
    assert entry["state"] == "ERROR" and "corrupt" in entry["error"]
    assert (
        requests.get(f"http://127.0.0.1:{server.admin_http.port}/health", timeout=10).text == "OK"
    )


def test_an_unreachable_download_url_falls_back_to_the_deep_store_copy(
    server, store, segment_tar, tmp_path
):
    tar, num_rows, crc = segment_tar
    dead = "http://127.0.0.1:1/segments/airlineStats/day0"
    store.put_segment_metadata(SegmentZKMetadata(
        "day0", RESOURCE, crc=crc, total_docs=num_rows, download_url=dead,
        extra={"segment.deep.store.url": str(tar)},
    ))  # fmt: skip
    store.put_segment_metadata(SegmentZKMetadata(
        "gone", RESOURCE, download_url=dead,
        extra={"segment.deep.store.url": str(tmp_path / "missing.tar.gz")},
    ))  # fmt: skip
    assign(store, {"day0": "ONLINE", "gone": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE", "gone": "ERROR"},
             what="day0 ONLINE from the deep store, gone in ERROR")  # fmt: skip
    admin = requests.get(f"http://127.0.0.1:{server.admin_http.port}/segments", timeout=10).json()
    (gone,) = [s for s in admin["tables"][RESOURCE] if s["segmentName"] == "gone"]
    assert dead in gone["error"] and "the deep store copy also failed" in gone["error"]


def test_local_copies_no_longer_assigned_are_removed_at_start(zookeeper, store, tmp_path):
    stale = tmp_path / "data" / RESOURCE / "old_segment"
    stale.mkdir(parents=True)
    (stale / "metadata.json").write_text("{}")
    leftover = tmp_path / "data" / RESOURCE / ".staging-1234"
    leftover.mkdir()
    instance = ServerInstance(ServerConfig(
        zookeeper.address, store.paths.cluster_name, host="127.0.0.1", bind="127.0.0.1",
        query_port=free_port(), admin_port=free_port(), data_dir=tmp_path / "data",
    ))  # fmt: skip
    instance.start()
    try:
        wait_for(instance.healthy, what="the first pass")
        assert not stale.exists() and not leftover.exists()
    finally:
        instance.stop()
