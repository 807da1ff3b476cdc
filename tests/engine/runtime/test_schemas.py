"""The schema cache against the real ZooKeeper: a table's schema by its own name or by its
table config's schemaName, re-read after the schema's znode changes, None when absent."""

from __future__ import annotations

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
