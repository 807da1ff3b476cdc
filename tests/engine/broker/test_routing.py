"""Broker routing against the real ZooKeeper: table configs are read through engine.spi's
TableConfig (time column, partitioning, push frequency), an invalid one still routes its
segments (without the pruning it would allow), and a changed config is picked up."""

from __future__ import annotations

import time
import uuid

import pytest
from kazoo.client import KazooClient

from engine.broker.routing import RoutingManager
from engine.clusterstate import ClusterStore, InstanceConfig, ResourceAssignment
from engine.runtime import Participant, SchemaCache
from engine.runtime.outbound import OutboundPolicy
from engine.spi.datetime_format import UNIT_MILLIS

HOUR_MS, DAY_MS = UNIT_MILLIS["HOURS"], UNIT_MILLIS["DAYS"]

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


def test_a_live_servers_address_written_through_the_rest_api_is_checked(routing):
    """Server_a_1 is live at an address an API caller wrote (loopback): the broker neither
    queries nor health-probes it there; a server that registered its loopback address itself
    is routed as it is; one allowed by SPRIG_OUTBOUND_ALLOWED_HOSTS at the checked address."""
    store, manager = routing
    store.register_live_instance("Server_a_1")
    store.register_live_instance("Server_b_1")
    store.put_instance_config(InstanceConfig("Server_a_1", "127.0.0.1", 8098, admin_port=6379))
    store.put_instance_config(InstanceConfig("Server_b_1", "127.0.0.1", 8099, admin_port=8097,
                                             self_registered=True))  # fmt: skip
    servers = manager.refresh().servers
    assert "Server_a_1" not in servers
    assert servers["Server_b_1"].health_url == "http://127.0.0.1:8097/health"
    manager.outbound = OutboundPolicy(("localhost", "127.0.0.0/8"))
    store.put_instance_config(InstanceConfig("Server_a_1", "localhost", 8098, admin_port=8097))
    checked = manager.refresh().servers["Server_a_1"]
    assert checked.host in ("127.0.0.1", "::1") and checked.port == 8098  # localhost, resolved
