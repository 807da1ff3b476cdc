"""Broker routing against the real ZooKeeper: table configs are read through engine.spi's
TableConfig (time column, partitioning, push frequency), an invalid one still routes its
segments (without the pruning it would allow), and a changed config is picked up."""

from __future__ import annotations

import time
import uuid

import pytest
from kazoo.client import KazooClient

from engine.broker.routing import DAY_MS, HOUR_MS, RoutingManager
from engine.clusterstate import ClusterStore, InstanceConfig, ResourceAssignment
from engine.runtime import Participant, SchemaCache

pytestmark = pytest.mark.integration

SCHEMA = {
    "schemaName": "clicks",
    "dimensionFieldSpecs": [{"name": "k", "dataType": "INT"}],
    "dateTimeFieldSpecs": [{"name": "day", "dataType": "INT", "format": "1:DAYS:EPOCH",
                            "granularity": "1:DAYS"}],
}  # fmt: skip


def offline_config(**segments_config) -> dict:
    return {
        "tableName": "clicks",
        "tableType": "OFFLINE",
        "segmentsConfig": {"timeColumnName": "day", "replication": "1", **segments_config},
        "tableIndexConfig": {"segmentPartitionConfig": {"columnPartitionMap": {
            "k": {"functionName": "murmur3", "numPartitions": 4,
                  "functionConfig": {"seed": "7"}}}}},
    }  # fmt: skip


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def routing(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    store = ClusterStore(client, f"route_{uuid.uuid4().hex[:8]}")
    store.ensure_cluster()
    store.put_schema(SCHEMA)
    store.put_table_config(offline_config(segmentPushFrequency="HOURLY"))
    store.put_external_view(ResourceAssignment("clicks_OFFLINE", {"s0": {"Server_a_1": "ONLINE"}}))
    participant = Participant(
        zookeeper.address, store.paths.cluster_name, InstanceConfig("Broker_test_1", "test", 1)
    )
    participant.start(10)
    manager = RoutingManager(participant, SchemaCache(participant.store), resync_interval_s=1.0)
    manager.start()
    wait_for(manager.ready.is_set, what="the first routing table")
    yield store, manager
    manager.stop()
    participant.stop()
    client.stop()
    client.close()


def test_table_config_is_read_through_the_spi(routing):
    store, manager = routing
    route = wait_for(lambda: manager.snapshot.routes.get("clicks_OFFLINE"), what="the route")
    assert route.segment_servers == {"s0": ("Server_a_1",)}
    assert route.time_column == "day" and route.time_unit_ms == DAY_MS
    assert route.push_frequency_ms == HOUR_MS
    (column,) = route.partitioning
    partitioning = route.partitioning[column]
    assert column == "k" and partitioning.num_partitions == 4
    assert partitioning.function == "Murmur3"  # the spi's canonical name for "murmur3"
    assert dict(partitioning.function_config) == {"seed": "7"}
    assert "Broker_test_1" in store.live_instances()  # the same loop keeps it registered

    # a changed config is picked up by the watch
    store.put_table_config({**offline_config(), "tableIndexConfig": {}})
    wait_for(lambda: not manager.snapshot.routes["clicks_OFFLINE"].partitioning, what="update")
    assert manager.snapshot.routes["clicks_OFFLINE"].push_frequency_ms == DAY_MS


def test_an_invalid_table_config_still_routes_its_segments(routing):
    store, manager = routing
    # a REALTIME config without stream configs is invalid: no partitioning, the schema's
    # time column, and the segments are still served
    invalid = {**offline_config(), "tableType": "REALTIME"}
    store.put_table_config(invalid)
    store.put_external_view(ResourceAssignment("clicks_REALTIME", {"r0": {"Server_a_1": "ONLINE"}}))
    route = wait_for(lambda: manager.snapshot.routes.get("clicks_REALTIME"), what="the route")
    assert route.segment_servers == {"r0": ("Server_a_1",)}
    assert route.partitioning == {} and route.time_column == "day"
