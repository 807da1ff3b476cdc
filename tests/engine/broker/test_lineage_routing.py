"""The broker routes a lineage-consistent set of segments, and follows the lineage znode by
its watch (the periodic resync is set far beyond the test), including a lineage created after
the broker started and one that is unreadable.

Watches are one-shot and several changes can land in one rebuild, so the tests wait for a state
(``caught_up``), never for a number of rebuilds. The last tests force, through the broker's
ZooKeeper client, the interleavings where a watch could be missed: a znode created between the
read that found it missing and the watch on its creation, and a change landing while the
rebuild reads it; each time the routing must reach the written state."""

from __future__ import annotations

import threading
import uuid

import pytest
import urllib3
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from engine.broker.broker_query import BrokerQuery
from engine.broker.errors import BROKER_RESOURCE_MISSING_ERROR_CODE
from engine.broker.handler import QueryRunner
from engine.broker.metrics import BrokerMetrics
from engine.broker.routes import TableUnroutableError
from engine.broker.routing import RoutingManager
from engine.broker.selection import BalancedSelector, ServerHealth
from engine.clusterstate import (
    ClusterStore,
    InstanceConfig,
    ResourceAssignment,
    SegmentZKMetadata,
)
from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    update_lineage,
)
from engine.runtime import Participant, SchemaCache
from tests.engine.broker.test_routing import SCHEMA, offline_config, wait_for

DAY_MS = 86_400_000

pytestmark = pytest.mark.integration

TABLE = "clicks_OFFLINE"
SERVER = "Server_a_1"


@pytest.fixture
def routing(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    store = ClusterStore(client, f"lineage_route_{uuid.uuid4().hex[:8]}")
    store.ensure_cluster()
    store.put_schema(SCHEMA)
    store.put_table_config(offline_config())
    view = {s: {SERVER: "ONLINE"} for s in ("a", "b", "x")}
    store.put_external_view(ResourceAssignment(TABLE, view))
    participant = Participant(
        zookeeper.address, store.paths.cluster_name, InstanceConfig("Broker_test_1", "test", 1)
    )
    participant.start(10)
    manager = RoutingManager(participant, SchemaCache(participant.store), resync_interval_s=600)
    manager.start()
    wait_for(manager.ready.is_set, what="the first routing table")
    yield store, manager
    manager.stop()
    participant.stop()
    client.stop()
    client.close()


def routed(manager) -> set[str]:
    route = manager.snapshot.routes.get(TABLE)
    return set(route.segment_servers) if route else set()


def caught_up(store, manager) -> None:
    """Wait until the routing has read everything written so far: a rebuild lists the external
    views before reading any table's, so one that routes a marker table written now has read
    every earlier write."""
    marker = f"marker{uuid.uuid4().hex[:8]}_OFFLINE"
    store.put_external_view(ResourceAssignment(marker, {}))
    wait_for(lambda: marker in manager.snapshot.routes, what="the routing to catch up")


def view_of(*segments: str) -> ResourceAssignment:
    return ResourceAssignment(TABLE, {s: {SERVER: "ONLINE"} for s in segments})


def set_state(store, entry_id: str, entry: LineageEntry) -> None:
    def change(current: SegmentLineage) -> SegmentLineage:
        current.entries[entry_id] = entry
        return current

    update_lineage(store, TABLE, change)


def test_routing_follows_the_lineage(routing):
    store, manager = routing
    wait_for(lambda: routed(manager) == {"a", "b", "x"}, what="the plain route")

    # the lineage znode is created after the broker started: its creation is watched
    entry = LineageEntry(("a", "b"), ("c",), LineageEntryState.IN_PROGRESS, 1)
    set_state(store, "e1", entry)
    # c is uploaded and loaded, but hidden while the entry is IN_PROGRESS
    store.put_external_view(view_of("a", "b", "c", "x"))
    caught_up(store, manager)  # both writes may land in one rebuild: wait for what it read
    assert routed(manager) == {"a", "b", "x"}  # c hidden

    set_state(store, "e1", entry.with_state(LineageEntryState.COMPLETED, 2))
    wait_for(lambda: routed(manager) == {"c", "x"}, what="the switch to c")
    route = manager.snapshot.routes[TABLE]
    assert set(route.segments) == {"c", "x"}  # pruning and the time boundary see c only

    set_state(store, "e1", entry.with_state(LineageEntryState.REVERTED, 3))
    wait_for(lambda: routed(manager) == {"a", "b", "x"}, what="the revert to a and b")


def test_completed_entry_waits_for_its_segments_to_be_served(routing):
    store, manager = routing
    entry = LineageEntry(("a", "b"), ("c",), LineageEntryState.COMPLETED, 1)
    set_state(store, "e1", entry)
    # c is assigned but not loaded anywhere yet: a and b keep serving
    view = {s: {SERVER: "ONLINE"} for s in ("a", "b", "x")} | {"c": {SERVER: "OFFLINE"}}
    version = manager.snapshot.version
    store.put_external_view(ResourceAssignment(TABLE, view))
    wait_for(lambda: manager.snapshot.version > version, what="a rebuild")
    assert routed(manager) == {"a", "b", "x"}
    view["c"] = {SERVER: "ONLINE"}
    store.put_external_view(ResourceAssignment(TABLE, view))
    wait_for(lambda: routed(manager) == {"c", "x"}, what="c once it is served")


def test_an_unreadable_lineage_keeps_the_last_route(routing):
    store, manager = routing
    set_state(store, "e1", LineageEntry(("a",), ("c",), LineageEntryState.COMPLETED, 1))
    store.put_external_view(
        ResourceAssignment(TABLE, {s: {SERVER: "ONLINE"} for s in ("a", "b", "c", "x")})
    )
    wait_for(lambda: routed(manager) == {"b", "c", "x"}, what="the lineage route")
    version = manager.snapshot.version
    store.put_raw(store.paths.segment_lineage(TABLE), b'{"id": "clicks_OFFLINE", '
                  b'"listFields": {"e1": ["a", "c", "DONE", "1"]}}')  # fmt: skip
    wait_for(lambda: manager.snapshot.version > version, what="a rebuild")
    assert routed(manager) == {"b", "c", "x"}  # not a, which would count its rows twice


BAD_LINEAGE = b'{"id": "clicks_OFFLINE", "listFields": {"e1": ["a", "c", "DONE", "1"]}}'


def test_an_unreadable_lineage_without_a_last_route_refuses_the_table(zookeeper):
    """A broker that never read the lineage cannot tell inputs from outputs: it answers every
    query on the table with an error naming it (never the rows of both) until it is fixed."""
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    store = ClusterStore(client, f"lineage_bad_{uuid.uuid4().hex[:8]}")
    store.ensure_cluster()
    store.put_schema(SCHEMA)
    store.put_table_config(offline_config())
    view = {s: {SERVER: "ONLINE"} for s in ("a", "b", "c", "x")}
    store.put_external_view(ResourceAssignment(TABLE, view))
    store.put_raw(store.paths.segment_lineage(TABLE), BAD_LINEAGE)
    participant = Participant(
        zookeeper.address, store.paths.cluster_name, InstanceConfig("Broker_test_1", "test", 1)
    )
    participant.start(10)
    schemas = SchemaCache(participant.store)
    manager = RoutingManager(participant, schemas, resync_interval_s=600)
    manager.start()
    try:
        wait_for(manager.ready.is_set, what="the first routing table")
        route = manager.snapshot.routes[TABLE]
        assert route.segment_servers == {} and route.segments == {}
        assert "segment lineage cannot be read" in route.unroutable
        selector = BalancedSelector(ServerHealth(urllib3.PoolManager()))
        # the refusal comes before any server is asked, so there is no scatter
        runner = QueryRunner(manager, schemas, selector, None, BrokerMetrics())
        for sql in ("SELECT COUNT(*) FROM clicks", "SELECT COUNT(*) FROM clicks_OFFLINE"):
            response = runner.run(BrokerQuery.from_fields(sql, None, None))
            assert response["partialResult"] is True
            assert "resultTable" not in response or response["resultTable"] is None
            [error] = response["exceptions"]
            assert error["errorCode"] == BROKER_RESOURCE_MISSING_ERROR_CODE
            assert TABLE in error["message"] and "segment lineage" in error["message"]
        with pytest.raises(TableUnroutableError):
            manager.snapshot.check_routable([TABLE])

        # readable again (its watch fires): the lineage-consistent set is routed
        fixed = SegmentLineage(TABLE)
        fixed.entries["e1"] = LineageEntry(("a",), ("c",), LineageEntryState.COMPLETED, 1)
        store.put_raw(store.paths.segment_lineage(TABLE), fixed.to_record().to_bytes())
        wait_for(lambda: manager.snapshot.routes[TABLE].unroutable is None, what="a new route")
        assert routed(manager) == {"b", "c", "x"}
        manager.snapshot.check_routable([TABLE])
    finally:
        manager.stop()
        participant.stop()
        client.stop()
        client.close()


class ForcedInterleaving:
    """Runs ``action`` inside the broker's next read of ``path`` (its ZooKeeper client's
    ``get``): after the read when it returns the data, before its NoNodeError when the znode
    is missing. Then waits for the watches the action fired to reach the routing (its wake
    event), so the action is known to fall between the read and what the broker does next."""

    def __init__(self, manager: RoutingManager, path: str, action) -> None:
        self.manager, self.path, self.action = manager, path, action
        self.done = threading.Event()
        client = manager.participant.client
        self._get = client.get
        client.get = self._wrapped

    def _wrapped(self, path, watch=None):
        if path != self.path or self.done.is_set():
            return self._get(path, watch=watch)
        try:
            got = self._get(path, watch=watch)
        except NoNodeError:
            self._act()
            raise
        self._act()
        return got

    def _act(self) -> None:
        self.done.set()
        self.action()
        assert self.manager.wake.wait(10), "the action fired no watch of the routing"


def test_a_lineage_created_just_after_the_broker_found_none_is_followed(routing):
    store, manager = routing
    entry = LineageEntry(("a", "b"), ("c",), LineageEntryState.IN_PROGRESS, 1)
    forced = ForcedInterleaving(
        manager, store.paths.segment_lineage(TABLE), lambda: set_state(store, "e1", entry)
    )
    store.put_external_view(view_of("a", "b", "c", "x"))  # a rebuild, which reads the lineage
    assert forced.done.wait(20), "the broker never read the lineage"
    caught_up(store, manager)
    assert routed(manager) == {"a", "b", "x"}  # the new lineage hides c
    set_state(store, "e1", entry.with_state(LineageEntryState.COMPLETED, 2))  # still watched
    wait_for(lambda: routed(manager) == {"c", "x"}, what="the switch to c")


def test_an_external_view_changed_during_a_rebuild_is_followed(routing):
    store, manager = routing
    forced = ForcedInterleaving(
        manager, store.paths.external_view(TABLE),
        lambda: store.put_external_view(view_of("a", "b", "c", "x")),
    )  # fmt: skip
    manager.poke()
    assert forced.done.wait(20), "the broker never read the external view"
    wait_for(lambda: routed(manager) == {"a", "b", "c", "x"}, what="the view read after it")


def segment_metadata(segment: str, end_day: int) -> SegmentZKMetadata:
    return SegmentZKMetadata(
        segment, TABLE, start_time=1, end_time=end_day, time_unit="DAYS", total_docs=1
    )


def end_ms(manager, segment: str):
    route = manager.snapshot.routes.get(TABLE)
    return route.segments[segment].end_ms if route and segment in route.segments else None


def test_segment_metadata_written_after_its_segment_is_routed_is_followed(routing):
    store, manager = routing
    assert end_ms(manager, "a") is None  # routed before it has metadata
    store.put_segment_metadata(segment_metadata("a", 2))
    wait_for(lambda: end_ms(manager, "a") == 2 * DAY_MS, what="the new metadata")


def test_segment_metadata_changed_while_the_broker_reads_it_is_followed(routing):
    store, manager = routing
    store.put_segment_metadata(segment_metadata("a", 2))
    caught_up(store, manager)
    forced = ForcedInterleaving(
        manager, store.paths.segment(TABLE, "a"),
        lambda: store.put_segment_metadata(segment_metadata("a", 5)),
    )  # fmt: skip
    store.put_segment_metadata(segment_metadata("a", 3))  # the broker reads it again...
    assert forced.done.wait(20), "the broker never read the segment's metadata"
    # ...and 5 lands between that read and the broker keeping what it read
    wait_for(lambda: end_ms(manager, "a") == 5 * DAY_MS, what="the metadata written last")
