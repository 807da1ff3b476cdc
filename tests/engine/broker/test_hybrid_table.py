"""A hybrid table end to end on the real ZooKeeper: an in-process server and broker, with the
controller's part (table configs, segment metadata, ideal states, external views) written
through ClusterStore. Checks the time boundary split, broker time and partition pruning."""

from __future__ import annotations

import time
import uuid

import orjson
import pyarrow as pa
import pytest
import requests
from kazoo.client import KazooClient

from engine.broker import BrokerConfig, BrokerInstance
from engine.clusterstate import ClusterStore, SegmentZKMetadata
from engine.segment import build_segment, pack_segment
from engine.server import ServerConfig, ServerInstance
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from sprig.stack.process import free_port
from tests.engine.query import conformance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RAW = "airlineStats"


def wait_for(predicate, timeout_s=30.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def day_rows(pinot_examples):
    """Rows of the first ten days, by DaysSinceEpoch."""
    files = conformance.airline_avro_files(pinot_examples)[:10]
    return [conformance.read_avro(path) for path in files]


def build(pinot_examples, rows, name, out):
    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    built = build_segment(pa.Table.from_pylist(rows), schema, config, out / "built",
                          segment_name=name)  # fmt: skip
    return pack_segment(built.path, out / f"{name}.tar.gz"), built.metadata


@pytest.fixture(scope="module")
def hybrid(zookeeper, pinot_examples, day_rows, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hybrid")
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    store = ClusterStore(client, f"hyb_{uuid.uuid4().hex[:8]}")
    store.ensure_cluster()
    store.put_schema(conformance.airline_schema(pinot_examples))
    offline = conformance.airline_table_config(pinot_examples)
    offline["tableIndexConfig"]["segmentPartitionConfig"] = {
        "columnPartitionMap": {"Month": {"functionName": "Modulo", "numPartitions": 4}}
    }
    store.put_table_config(offline)
    # the REALTIME half as the controller stores it: a REALTIME config names its stream
    stream = {"streamType": "kafka", "stream.kafka.topic.name": "airline",
              "stream.kafka.broker.list": "127.0.0.1:9092"}  # fmt: skip
    index = {**offline["tableIndexConfig"], "streamConfigs": stream}
    store.put_table_config({**offline, "tableType": "REALTIME", "tableIndexConfig": index})
    server = ServerInstance(ServerConfig(
        zookeeper.address, store.paths.cluster_name, host="127.0.0.1", bind="127.0.0.1",
        query_port=free_port(), admin_port=free_port(), data_dir=tmp_path / "server",
        resync_interval_s=1.0,
    ))  # fmt: skip
    broker = BrokerInstance(BrokerConfig(
        zookeeper.address, store.paths.cluster_name, host="127.0.0.1", bind="127.0.0.1",
        port=free_port(), resync_interval_s=1.0,
    ))  # fmt: skip
    server.start()
    broker.start()
    wait_for(lambda: server.healthy() and broker.healthy(), what="registration")
    # OFFLINE: days 0-4 and 5-7 (two segments); REALTIME: days 6-9 (overlaps days 6-7)
    layout = {
        "OFFLINE": {"off_a": range(0, 5), "off_b": range(5, 8)},
        "REALTIME": {"rt_a": range(6, 10)},
    }
    for table_type, segments in layout.items():
        resource = f"{RAW}_{table_type}"
        for name, days in segments.items():
            rows = [r for d in days for r in day_rows[d]]
            tar, meta = build(pinot_examples, rows, name, tmp_path / name)
            partition = {"columnPartitionMap": {"Month": {
                "functionName": "Modulo", "numPartitions": 4, "partitions": [1]}}}  # fmt: skip
            store.put_segment_metadata(SegmentZKMetadata(
                name, resource, crc=str(meta.crc), total_docs=len(rows),
                start_time=int(meta.start_time), end_time=int(meta.end_time),
                time_unit=meta.time_unit, download_url=str(tar),
                extra={"segment.partition.metadata": orjson.dumps(partition).decode()},
            ))  # fmt: skip

        def assign(ideal, names=tuple(segments)):
            ideal.segments = {n: {server.instance_id: "ONLINE"} for n in names}
            return ideal

        store.update_ideal_state(resource, assign)

    def all_online():  # the controller's external-view aggregation
        store.refresh_external_views()
        views = [store.external_view(f"{RAW}_{t}") for t in layout]
        return all(v and len(v.segments) == len(layout[t]) and all(
            s == {server.instance_id: "ONLINE"} for s in v.segments.values())
            for t, v in zip(layout, views, strict=True))  # fmt: skip

    wait_for(all_online, what="all segments ONLINE")

    def routed():
        url = f"http://127.0.0.1:{broker.port}/debug/routingTable/{RAW}"
        table = requests.get(url, timeout=10).json()
        names = sorted(s for servers in table.values() for segs in servers.values() for s in segs)
        return names == ["off_a", "off_b", "rt_a"]

    wait_for(routed, what="the broker to route every segment")
    yield broker, day_rows
    broker.stop()
    server.stop()
    client.stop()
    client.close()


def query(broker, sql):
    return requests.post(f"http://127.0.0.1:{broker.port}/query/sql", json={"sql": sql},
                         timeout=30).json()  # fmt: skip


def test_hybrid_table_splits_at_the_time_boundary(hybrid):
    broker, day_rows = hybrid
    days = [rows[0]["DaysSinceEpoch"] for rows in day_rows]
    boundary = days[7] - 1  # max OFFLINE end time (day 7) minus one day
    wait_for(lambda: requests.get(f"http://127.0.0.1:{broker.port}/debug/timeBoundary/{RAW}",
                                  timeout=10).status_code == 200, what="time boundary")  # fmt: skip
    got = requests.get(f"http://127.0.0.1:{broker.port}/debug/timeBoundary/{RAW}", timeout=10)
    assert got.json() == {"timeColumn": "DaysSinceEpoch", "timeValue": str(boundary)}
    # OFFLINE serves days 0..6 (<= boundary), REALTIME days 7..9: every day exactly once
    expected = sum(len(rows) for rows in day_rows)
    response = query(broker, f"SELECT COUNT(*) FROM {RAW}")
    assert response["exceptions"] == []
    assert response["resultTable"]["rows"] == [[expected]]
    assert response["numServersQueried"] == 2  # one request per table type
    per_day = query(broker, f"SELECT DaysSinceEpoch, COUNT(*) FROM {RAW} GROUP BY "
                            "DaysSinceEpoch ORDER BY DaysSinceEpoch LIMIT 20")  # fmt: skip
    assert per_day["resultTable"]["rows"] == [
        [d, len(r)] for d, r in zip(days, day_rows, strict=True)
    ]
    # naming a table type queries it alone, without the boundary
    only_offline = query(broker, f"SELECT COUNT(*) FROM {RAW}_OFFLINE")
    assert only_offline["resultTable"]["rows"] == [[sum(len(r) for r in day_rows[:8])]]


def test_broker_prunes_by_time_and_partition(hybrid):
    broker, day_rows = hybrid
    first_day = day_rows[0][0]["DaysSinceEpoch"]
    response = query(
        broker, f"SELECT COUNT(*) FROM {RAW}_OFFLINE WHERE DaysSinceEpoch = {first_day}"
    )
    assert response["numSegmentsQueried"] == 1 and response["numSegmentsPrunedByBroker"] == 1
    assert response["resultTable"]["rows"] == [[len(day_rows[0])]]
    # every segment records Month partition 1 (January, Modulo 4): Month = 2 prunes them all
    pruned = query(broker, f"SELECT COUNT(*) FROM {RAW}_OFFLINE WHERE Month = 2")
    assert pruned["numSegmentsQueried"] == 0 and pruned["numSegmentsPrunedByBroker"] == 2
    assert pruned["resultTable"]["rows"] == [[0]] and pruned["exceptions"] == []
    kept = query(broker, f"SELECT COUNT(*) FROM {RAW}_OFFLINE WHERE Month IN (1, 2)")
    assert kept["numSegmentsQueried"] == 2


def test_trace_reports_each_servers_stages_and_segments(hybrid):
    broker, _ = hybrid
    sql = f"SELECT Carrier, COUNT(*) FROM {RAW} GROUP BY Carrier ORDER BY Carrier LIMIT 50"
    url = f"http://127.0.0.1:{broker.port}/query/sql"
    plain = requests.post(url, json={"sql": sql}, timeout=30).json()
    traced = requests.post(url, json={"sql": sql, "trace": True}, timeout=30).json()
    assert "traceInfo" not in plain and "brokerReduceTimeMs" not in plain
    assert traced["brokerReduceTimeMs"] >= 0
    assert traced["exceptions"] == [] and traced["resultTable"] == plain["resultTable"]
    # one server holds both halves: its two answers are filed under it together
    ((instance, info),) = traced["traceInfo"].items()
    assert instance.startswith("Server_") and info["responded"]
    assert sorted(s["segment"] for s in info["segments"]) == ["off_a", "off_b", "rt_a"]
    assert sum(s["numDocsScanned"] for s in info["segments"]) == traced["numDocsScanned"]
    for segment in info["segments"]:
        names = [op["operator"] for op in segment["operators"]]
        assert names[0] == "SegmentPruner" and names[-1] == "GroupByOperator", names
    names = [op["operator"] for op in info["operators"]]
    assert names.count("ServerQueryPlanning") == 2 and names.count("CombineOperator") == 2
    assert info["serverTimeMs"] > 0 and info["timeUsedMs"] >= 0
    assert 0 <= info["gcPauseMs"] <= info["serverTimeMs"]
    # the trace query option does the same
    option = query(broker, f"SET trace = true; {sql}")
    assert list(option["traceInfo"]) == [instance]
    assert len(option["traceInfo"][instance]["segments"]) == 3
