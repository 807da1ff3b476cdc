"""The broker's routing under scripted interleavings of controller writes and its own reads.

Each test arms a hook that runs controller writes (to real ZooKeeper) right after the
broker's routing pass has read the table's external view, i.e. between the reads a pass
makes, which is where a watch-driven rebuild can pair a view with a lineage of another
moment. Every snapshot the broker publishes is recorded, and each must route a
lineage-consistent set: segment ``a`` (the input) or ``c`` (its replacement), never both,
never neither (``x`` is an unrelated segment always routed)."""

from __future__ import annotations

import threading
import uuid

import pytest
from kazoo.client import KazooClient

from engine.broker.routing import RoutingManager
from engine.clusterstate import ClusterStore, InstanceConfig, ResourceAssignment
from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    update_lineage,
)
from engine.runtime import Participant, SchemaCache
from tests.engine.broker.test_routing import SCHEMA, offline_config, wait_for

pytestmark = pytest.mark.integration

TABLE = "clicks_OFFLINE"
SERVER = "Server_a_1"
IN_PROGRESS = LineageEntryState.IN_PROGRESS
COMPLETED = LineageEntryState.COMPLETED
REVERTED = LineageEntryState.REVERTED
OLD, NEW = frozenset({"a", "x"}), frozenset({"c", "x"})


class Broker:
    """A RoutingManager whose every published route of TABLE is kept, with a hook run after
    the pass's read of the external view."""

    def __init__(self, zookeeper_address: str, store: ClusterStore) -> None:
        self.store = store
        self.routes: list[frozenset[str]] = []
        self._lock = threading.Lock()
        self._hooks: list = []
        participant = Participant(
            zookeeper_address, store.paths.cluster_name, InstanceConfig("Broker_t_1", "t", 1)
        )
        participant.start(10)
        self.participant = participant
        self.manager = RoutingManager(participant, SchemaCache(participant.store),
                                      resync_interval_s=600, on_change=self._published)  # fmt: skip
        view_path = store.paths.external_view(TABLE)
        read = self.manager._record

        def record(path, watch=None):
            got = read(path, watch)
            if path == view_path:
                with self._lock:
                    hook = self._hooks.pop(0) if self._hooks else None
                if hook is not None:
                    hook()  # the controller acts between this read and the pass's next one
            return got

        self.manager._record = record
        self.manager.start()
        wait_for(self.manager.ready.is_set, what="the first routing table")

    def _published(self, snapshot) -> None:
        route = snapshot.routes.get(TABLE)
        self.routes.append(frozenset(route.segment_servers) if route else frozenset())

    def after_next_view_read(self, *writes) -> None:
        """Run ``writes`` (in order) right after the next pass reads the external view."""

        def hook() -> None:
            for write in writes:
                write()

        with self._lock:
            self._hooks.append(hook)
        self.manager.poke()
        wait_for(lambda: not self._hooks, what="the hooked pass")

    def settle(self, expected: frozenset[str]) -> None:
        wait_for(lambda: self.routes and self.routes[-1] == expected, what=f"route {expected}")

    def assert_consistent(self) -> None:
        wrong = [r for r in self.routes if r not in (OLD, NEW)]
        assert not wrong, f"inconsistent routes published: {wrong} (all: {self.routes})"

    def stop(self) -> None:
        self.manager.stop()
        self.participant.stop()


@pytest.fixture
def cluster(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    store = ClusterStore(client, f"lineage_race_{uuid.uuid4().hex[:8]}")
    store.ensure_cluster()
    store.put_schema(SCHEMA)
    store.put_table_config(offline_config())
    brokers: list[Broker] = []

    def broker() -> Broker:
        brokers.append(Broker(zookeeper.address, store))
        return brokers[-1]

    yield store, broker
    for b in brokers:
        b.stop()
    client.stop()
    client.close()


def view(store: ClusterStore, *segments: str) -> None:
    store.put_external_view(ResourceAssignment(TABLE, {s: {SERVER: "ONLINE"} for s in segments}))


def write_entries(store: ClusterStore, **entries: LineageEntry | None) -> None:
    """Set (or, with None, drop) entries in one compare-and-set write."""

    def change(current: SegmentLineage) -> SegmentLineage:
        for entry_id, entry in entries.items():
            if entry is None:
                current.entries.pop(entry_id, None)
            else:
                current.entries[entry_id] = entry
        return current

    update_lineage(store, TABLE, change)


def entry(state: LineageEntryState, to: tuple[str, ...] = ("c",)) -> LineageEntry:
    return LineageEntry(("a",), to, state, 1)


def test_retention_dropping_a_completed_entry_between_the_reads(cluster):
    """Retention deletes the replaced ``a``, sees it gone from the view and drops the entry,
    all after the broker read a view that still had ``a``: paired with the new lineage (no
    entry), that view would route ``a`` beside ``c`` and count a's rows twice."""
    store, broker = cluster
    write_entries(store, e1=entry(COMPLETED))
    view(store, "a", "c", "x")
    b = broker()
    b.settle(NEW)
    b.after_next_view_read(lambda: view(store, "c", "x"),
                           lambda: write_entries(store, e1=None))  # fmt: skip
    b.settle(NEW)
    b.assert_consistent()


def test_retention_dropping_a_reverted_entry_between_the_reads(cluster):
    """The same for a reverted replacement: its ``c`` leaves the view, the entry is dropped."""
    store, broker = cluster
    write_entries(store, e1=entry(REVERTED))
    view(store, "a", "c", "x")
    b = broker()
    b.settle(OLD)
    b.after_next_view_read(lambda: view(store, "a", "x"),
                           lambda: write_entries(store, e1=None))  # fmt: skip
    b.settle(OLD)
    b.assert_consistent()


def test_end_and_revert_between_the_reads(cluster):
    """endReplaceSegments, then a revert, each landing between the broker's reads."""
    store, broker = cluster
    write_entries(store, e1=entry(IN_PROGRESS))
    view(store, "a", "x")
    b = broker()
    b.settle(OLD)
    b.after_next_view_read(lambda: view(store, "a", "c", "x"))  # c uploaded, still hidden
    b.after_next_view_read(lambda: write_entries(store, e1=entry(COMPLETED)))
    b.settle(NEW)
    b.after_next_view_read(lambda: write_entries(store, e1=entry(REVERTED)))
    b.settle(OLD)
    b.assert_consistent()


def test_force_cleanup_retry_reusing_the_names(cluster):
    """A retried subtask's start (forceCleanup) reverts the first attempt's entry, whose ``c``
    is ONLINE, and claims the same name in one write; ``c`` is uploaded again (a refresh:
    the view does not change) and the new entry is ended, each step between the reads."""
    store, broker = cluster
    write_entries(store, e1=entry(IN_PROGRESS))
    view(store, "a", "c", "x")
    b = broker()
    b.settle(OLD)

    def retry() -> None:
        write_entries(store, e1=entry(REVERTED, to=()), e2=entry(IN_PROGRESS))

    b.after_next_view_read(retry)
    b.after_next_view_read(lambda: view(store, "a", "c", "x"))
    b.after_next_view_read(lambda: write_entries(store, e2=entry(COMPLETED)))
    b.settle(NEW)
    # the retry's own attempt fails too and is reverted: c is deleted, then the entry dropped
    b.after_next_view_read(lambda: write_entries(store, e2=entry(REVERTED)))
    b.settle(OLD)
    b.after_next_view_read(lambda: view(store, "a", "x"),
                           lambda: write_entries(store, e1=None, e2=None))  # fmt: skip
    b.settle(OLD)
    b.assert_consistent()


def test_a_lineage_changing_under_every_read_keeps_the_last_route(cluster):
    """A lineage written between every pair of reads never yields a mixed route: the broker
    keeps its last route (each write pokes another pass) and follows once the writes stop."""
    store, broker = cluster
    write_entries(store, e1=entry(COMPLETED))
    view(store, "a", "c", "x")
    b = broker()
    b.settle(NEW)
    ts = iter(range(2, 10_000))

    def churn() -> None:  # rewrites the entry unchanged: a new znode version each time
        write_entries(store, e1=LineageEntry(("a",), ("c",), COMPLETED, next(ts)))

    for _ in range(4):
        b.after_next_view_read(churn)
    b.after_next_view_read(lambda: view(store, "c", "x"),
                           lambda: write_entries(store, e1=None))  # fmt: skip
    b.settle(NEW)
    b.assert_consistent()
