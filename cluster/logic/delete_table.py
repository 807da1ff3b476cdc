"""Delete a table type: its segments everywhere, its ZooKeeper state and its config row."""

from __future__ import annotations

from django.db import transaction

from cluster import models
from cluster.logic import audit
from cluster.logic.cluster_view import table_types
from cluster.logic.deep_store import get_deep_store
from cluster.logic.delete_segments import delete_segments, keep_deleted
from cluster.logic.instance_partitions import delete_placement
from cluster.logic.publish import unpublish_broker_resource
from controller.errors import NotFound
from engine.clusterstate import ClusterStore, split_table_name


def delete_table(
    store: ClusterStore, table_name: str, table_type: str | None, retention: str | None
) -> dict:
    types = table_types(table_name, table_type)
    if not types:
        raise NotFound(f"Table {table_name} does not exist")
    keep = keep_deleted(retention)
    raw, _ = split_table_name(table_name)
    deleted = []
    for kind in types:
        row = models.TableConfig.objects.get(table_name=raw, table_type=kind)
        resource = row.name_with_type
        with transaction.atomic():
            delete_segments(store, resource, None, keep=keep)
            store.delete_ideal_state(resource)
            store.delete_external_view(resource)
            store.delete(store.paths.table_segments(resource), recursive=True)
            store.delete_table_config(resource)
            delete_placement(store, resource)  # its replica-group instance partitions
            store.delete(store.paths.table_status_of(resource))
            unpublish_broker_resource(store, resource)
            row.delete()
            audit.record("table.delete", "table", resource, retention=retention or "")
        deleted.append(resource)
    if not models.TableConfig.objects.filter(table_name=raw).exists():
        get_deep_store().remove_table(raw, keep=keep)
    return {"status": f"Tables: [{', '.join(deleted)}] deleted"}
