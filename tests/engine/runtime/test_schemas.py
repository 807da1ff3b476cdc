"""The schema cache against the real ZooKeeper: a table's schema by its own name or by its
table config's schemaName, re-read after the schema's znode changes, None when absent."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStore
from engine.runtime import SchemaCache

pytestmark = pytest.mark.integration


def schema(name: str, *columns: str) -> dict:
    return {
        "schemaName": name,
        "dimensionFieldSpecs": [{"name": c, "dataType": "STRING"} for c in columns],
    }


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"schemas_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


def test_schema_by_table_config_schema_name_and_dropped_when_it_changes(store):
    store.put_schema(schema("clickSchema", "a"))
    store.put_table_config({"tableName": "clicks", "tableType": "OFFLINE",
                            "segmentsConfig": {"schemaName": "clickSchema"}})  # fmt: skip
    cache = SchemaCache(store)
    assert cache.get("clicks").columns == ["a"]
    assert cache.get("clicks") is cache.get("clicks")  # cached: no ZooKeeper round trip
    store.put_schema(schema("clickSchema", "a", "b"))
    deadline = time.monotonic() + 10
    while cache.get("clicks").columns != ["a", "b"]:  # the watch dropped the cached entry
        assert time.monotonic() < deadline, "the schema change was not seen"
        time.sleep(0.05)
    assert cache.get("nothing") is None


def test_an_invalid_table_config_falls_back_to_the_table_name(store):
    store.put_schema(schema("views", "v"))
    store.put_table_config(
        {"tableName": "views", "tableType": "REALTIME", "segmentsConfig": {"schemaName": "other"}}
    )  # no stream: invalid
    assert SchemaCache(store).get("views").columns == ["v"]


def _eventually(check, what: str) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_schema_created_after_it_was_read_as_missing_is_seen(store):
    """A get of a missing znode sets no watch: the cache must still hear of its creation,
    and of a table config created later that names another schema."""
    cache = SchemaCache(store)
    assert cache.get("late") is None
    assert cache.get("late") is None  # cached as missing
    store.put_schema(schema("late", "a"))
    _eventually(lambda: cache.get("late") is not None, "the created schema was not seen")
    assert cache.get("late").columns == ["a"]

    store.put_schema(schema("otherSchema", "x"))
    assert cache.get("named") is None
    store.put_table_config({"tableName": "named", "tableType": "OFFLINE",
                            "segmentsConfig": {"schemaName": "otherSchema"}})  # fmt: skip
    _eventually(lambda: cache.get("named") is not None, "the table config was not seen")
    assert cache.get("named").columns == ["x"]


def test_a_change_during_a_read_is_not_cached_stale(store):
    """The schema changes after the read and before the cache keeps it: the read's one-shot
    watch fires then, so a kept answer would stay stale with no watch left to drop it."""
    store.put_schema(schema("racy", "a"))
    cache = SchemaCache(store)
    real_load, real_invalidate = cache._load, cache.invalidate
    fired = threading.Event()

    def invalidate(raw_table=None):
        real_invalidate(raw_table)
        fired.set()

    def load_then_change(raw_table):
        loaded = real_load(raw_table)
        store.put_schema(schema("racy", "a", "b"))
        assert fired.wait(10), "the read's watch did not fire"
        return loaded

    cache.invalidate, cache._load = invalidate, load_then_change
    assert cache.get("racy").columns == ["a"]  # this read's answer, used once
    cache._load = real_load
    assert cache.get("racy").columns == ["a", "b"]  # and not kept
