"""The reconcile task: re-publish the controller's records (schemas, table configs) to
ZooKeeper and report drift, i.e. what was missing or different before re-publishing."""

from __future__ import annotations

import logging

from cluster import models
from cluster.logic.cluster_view import parsed
from cluster.logic.publish import publish_broker_resource, publish_schema, publish_table
from cluster.logic.rebalance_table import fail_orphaned_rebalances
from engine.clusterstate import ClusterStore
from engine.clusterstate.records import table_config_from_record, table_config_to_record

log = logging.getLogger(__name__)


def reconcile_state(store: ClusterStore) -> dict:
    """Returns ``{"drift": [...], "unmanaged": [...], "failedOrphanedRebalanceJobs": [...]}``:
    each drift item names the znode that was missing or differed and has been re-published;
    unmanaged znodes (in ZooKeeper but not in the controller's records) are reported only,
    never deleted; rebalance jobs left IN_PROGRESS by a stopped controller are marked FAILED."""
    drift, unmanaged = [], []
    schema_names = set()
    for row in models.Schema.objects.all():
        schema_names.add(row.name)
        published = store.schema(row.name)
        if published != row.config:
            drift.append({"path": store.paths.schema(row.name),
                          "problem": "missing" if published is None else "differs"})  # fmt: skip
            publish_schema(store, row.config)
    table_names = set()
    for row in models.TableConfig.objects.all():
        resource = row.name_with_type
        table_names.add(resource)
        published = store.table_config(resource)
        expected = table_config_from_record(table_config_to_record(row.config))
        missing_ideal = store.ideal_state(resource) is None
        if published != expected:
            drift.append({"path": store.paths.table_config(resource),
                          "problem": "missing" if published is None else "differs"})  # fmt: skip
        if missing_ideal:
            drift.append({"path": store.paths.ideal_state(resource), "problem": "missing"})
        if published != expected or missing_ideal:
            publish_table(store, parsed(row))
        else:  # unchanged znodes are not rewritten; the broker entry follows broker tags
            publish_broker_resource(store, parsed(row))
    for name in store.schema_names():
        if name not in schema_names:
            unmanaged.append(store.paths.schema(name))
    for name in store.table_names_with_type():
        if name not in table_names:
            unmanaged.append(store.paths.table_config(name))
    orphaned = fail_orphaned_rebalances(store)
    for item in drift:
        log.warning("cluster state drift: %s %s (re-published)", item["path"], item["problem"])
    return {"drift": drift, "unmanaged": unmanaged, "failedOrphanedRebalanceJobs": orphaned}
