"""Read-side helpers over the cluster layout shared by several verbs."""

from __future__ import annotations

from cluster import models
from controller.errors import BadRequest, NotFound
from engine.clusterstate import ClusterStore, InstanceConfig, InstanceType, split_table_name
from engine.clusterstate.tags import broker_tag, server_tag
from engine.spi import TableConfig


def instances_with_tag(
    store: ClusterStore, tag: str, *, enabled_only: bool = True
) -> list[InstanceConfig]:
    return [
        config
        for _, config in sorted(store.instance_configs().items())
        if tag in config.tags and (config.enabled or not enabled_only)
    ]


def table_server_tag(config: TableConfig) -> str:
    """A REALTIME table's consuming servers carry ``tenants.tagOverrideConfig.realtimeConsuming``
    when it is set (Pinot's override); otherwise the tenant's tag for the table type."""
    if config.table_type == "REALTIME":
        consuming = str(config.tenants.tag_override_config.get("realtimeConsuming") or "")
        if consuming.strip():
            return consuming.strip()
    return server_tag(config.tenants.server, config.table_type)


def table_broker_tag(config: TableConfig) -> str:
    return broker_tag(config.tenants.broker)


def is_dim_table(config: TableConfig) -> bool:
    return bool(config.to_json().get("isDimTable"))


def replication_of(config: TableConfig, servers: list[str] | None = None) -> int:
    """Copies of each segment: ``replication`` (``replicasPerPartition`` for REALTIME); a
    dimension table (``isDimTable``) is on every one of ``servers``."""
    if servers is not None and is_dim_table(config):
        return max(1, len(servers))
    segments = config.segments_config
    if config.table_type == "REALTIME" and segments.replicas_per_partition:
        return segments.replicas_per_partition
    return segments.replication


def table_servers(store: ClusterStore, config: TableConfig) -> list[str]:
    """Enabled servers of the table's tenant, sorted by id."""
    return [
        c.instance_id
        for c in instances_with_tag(store, table_server_tag(config))
        if c.type is InstanceType.SERVER
    ]


def check_replication(store: ClusterStore, config: TableConfig) -> list[str]:
    """The table's servers; BadRequest if there are fewer than its replication."""
    servers = table_servers(store, config)
    replication = replication_of(config, servers)
    if replication > len(servers):
        err = BadRequest(
            f"replication {replication} of {config.table_name_with_type} is higher than the "
            f"{len(servers)} enabled server(s) tagged {table_server_tag(config)}; add servers "
            f"to the tenant or lower segmentsConfig.replication"
        )
        err.field = "segmentsConfig.replication"
        raise err
    return servers


def table_types(raw_name: str, table_type: str | None) -> list[str]:
    """The types of ``raw_name`` that exist, restricted to ``table_type`` if given."""
    raw_name, suffix_type = split_table_name(raw_name)
    wanted = (table_type or suffix_type or "").upper() or None
    if wanted not in (None, "OFFLINE", "REALTIME"):
        raise BadRequest(f"type must be OFFLINE or REALTIME, got '{table_type}'")
    rows = models.TableConfig.objects.filter(table_name=raw_name)
    if wanted:
        rows = rows.filter(table_type=wanted)
    return [r.table_type for r in rows]


def table_rows(table_name: str | None, table_type: str | None = None) -> list[models.TableConfig]:
    """Every table (``table_name`` empty), or the types of one (raw or with type, narrowed by
    ``table_type``); NotFound naming it when there is none."""
    if not table_name:
        return list(models.TableConfig.objects.all())
    types = table_types(table_name, table_type)
    if not types:
        raise NotFound(f"Table {table_name} does not exist")
    raw = split_table_name(table_name)[0]
    return list(models.TableConfig.objects.filter(table_name=raw, table_type__in=types))


def table_row(raw_or_typed: str, table_type: str | None) -> models.TableConfig:
    """Exactly one table type; a raw name with both types needs ``table_type``."""
    raw_name, suffix_type = split_table_name(raw_or_typed)
    types = table_types(raw_or_typed, table_type)
    if not types:
        kind = table_type or suffix_type
        shown = f"{raw_name}_{kind.upper()}" if kind else raw_name
        raise NotFound(f"Table {shown} does not exist")
    if len(types) > 1:
        raise BadRequest(
            f"Table {raw_name} is hybrid (OFFLINE and REALTIME); pass type=OFFLINE or type=REALTIME"
        )
    return models.TableConfig.objects.get(table_name=raw_name, table_type=types[0])


def parsed(row: models.TableConfig) -> TableConfig:
    return TableConfig.from_json(row.config)
