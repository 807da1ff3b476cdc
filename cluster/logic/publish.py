"""Publishing the controller's records to ZooKeeper. Used inside the DB transaction of each
write (a failure rolls the write back) and by the reconcile task."""

from __future__ import annotations

from cluster.logic.cluster_view import instances_with_tag, table_broker_tag
from engine.clusterstate import BROKER_RESOURCE, ClusterStore, ResourceAssignment
from engine.spi import TableConfig


def publish_schema(store: ClusterStore, schema: dict) -> None:
    store.put_schema(schema)


def publish_table(store: ClusterStore, config: TableConfig) -> None:
    """Table config in the property store, its ideal state (kept if it exists) and its entry
    in the broker resource."""
    store.put_table_config(config.to_json())
    resource = config.table_name_with_type
    if store.ideal_state(resource) is None:
        store.put_ideal_state(
            ResourceAssignment(resource, replicas=str(config.segments_config.replication))
        )
    publish_broker_resource(store, config)


def publish_broker_resource(store: ClusterStore, config: TableConfig) -> None:
    brokers = [c.instance_id for c in instances_with_tag(store, table_broker_tag(config))]
    resource = config.table_name_with_type

    def change(ideal: ResourceAssignment) -> ResourceAssignment | None:
        wanted = dict.fromkeys(brokers, "ONLINE")
        if ideal.segments.get(resource) == wanted:
            return None
        ideal.segments[resource] = wanted
        return ideal

    store.update_ideal_state(BROKER_RESOURCE, change)


def unpublish_broker_resource(store: ClusterStore, table_with_type: str) -> None:
    def change(ideal: ResourceAssignment) -> ResourceAssignment | None:
        if table_with_type not in ideal.segments:
            return None
        del ideal.segments[table_with_type]
        return ideal

    store.update_ideal_state(BROKER_RESOURCE, change, create=False)
