"""Replica-group instance partitions (Pinot's InstancePartitions) for OFFLINE tables.

A table with ``instanceAssignmentConfigMap.OFFLINE.replicaGroupPartitionConfig`` (or the older
``segmentsConfig.replicaGroupStrategyConfig``) gets its servers split into replica groups, and
each replica group into partitions: ``{"<partition>_<replicaGroup>": [servers]}``, stored as
Pinot stores it, at ``PROPERTYSTORE/INSTANCE_PARTITIONS/<raw>_OFFLINE``. A table with
``instancePartitionsMap.OFFLINE`` uses the partitions of the table it names (colocation).

Replica groups are contiguous runs of the sorted server ids, so in every segment's sorted
replica list the i-th replica belongs to replica group i; the broker relies on this to send a
whole query to one replica group (``engine.broker.selection``).
"""

from __future__ import annotations

import dataclasses
import json
import zlib

from cluster.logic.assign_segments import Placed, assign_segment
from controller.errors import BadRequest
from engine.clusterstate import ClusterStore, ResourceAssignment, SegmentState
from engine.clusterstate.znrecord import ZNRecord
from engine.spi import TableConfig


@dataclasses.dataclass(frozen=True)
class ReplicaGroupPlacement:
    """Where one table's segments go: ``groups[p][r]`` are the servers of partition ``p`` in
    replica group ``r``; ``column`` is the partition column (None: one partition)."""

    name: str
    groups: list[list[list[str]]]
    column: str | None = None

    @property
    def num_partitions(self) -> int:
        return len(self.groups)

    @property
    def num_replica_groups(self) -> int:
        return len(self.groups[0])

    def to_record(self) -> ZNRecord:
        lists = {f"{p}_{r}": list(servers) for p, part in enumerate(self.groups)
                 for r, servers in enumerate(part)}  # fmt: skip
        return ZNRecord(self.name, {"partitionColumn": self.column or ""}, {}, lists)

    @classmethod
    def from_record(cls, record: ZNRecord) -> ReplicaGroupPlacement:
        keys = [tuple(int(x) for x in k.split("_")) for k in record.list_fields]
        parts, groups = max(p for p, _ in keys) + 1, max(r for _, r in keys) + 1
        grid = [[list(record.list_fields[f"{p}_{r}"]) for r in range(groups)] for p in range(parts)]
        return cls(record.id, grid, record.simple_fields.get("partitionColumn") or None)

    def placed(self, segment: str, partitions: list[int] | None) -> Placed:
        """The candidate servers, per replica group, of a segment with these data
        ``partitions`` (of the partition column)."""
        return Placed(self.groups[self.partition_of(segment, partitions)])

    def partition_of(self, segment: str, partitions: list[int] | None) -> int:
        """The segment's instance partition: its one data partition (modulo), else a stable
        hash of its name, as Pinot does for a segment that spans several partitions."""
        if partitions is not None and len(partitions) == 1:
            return partitions[0] % self.num_partitions
        return zlib.crc32(segment.encode()) % self.num_partitions


def _path(store: ClusterStore, name: str) -> str:
    return f"{store.paths.property_store}/INSTANCE_PARTITIONS/{name}"


def _replica_group_config(config: TableConfig) -> dict | None:
    raw = config.to_json()
    assignment = (raw.get("instanceAssignmentConfigMap") or {}).get("OFFLINE") or {}
    partition_config = assignment.get("replicaGroupPartitionConfig") or {}
    if str(partition_config.get("replicaGroupBased", "false")).lower() == "true":
        return partition_config
    legacy = (raw.get("segmentsConfig") or {}).get("replicaGroupStrategyConfig")
    if legacy:  # Pinot's older form: replication replica groups over the whole tenant
        return {"partitionColumn": legacy.get("partitionColumn"),
                "numInstancesPerPartition": legacy.get("numInstancesPerPartition")}  # fmt: skip
    return None


def _shared_name(config: TableConfig) -> str | None:
    return (config.to_json().get("instancePartitionsMap") or {}).get("OFFLINE") or None


def _int(spec: dict, key: str, default: int) -> int:
    value = spec.get(key)
    try:
        return default if value in (None, "", 0, "0") else int(value)
    except (TypeError, ValueError):
        raise BadRequest(
            f"replicaGroupPartitionConfig.{key} must be an integer, got {value!r}"
        ) from None


def compute_placement(config: TableConfig, servers: list[str]) -> ReplicaGroupPlacement | None:
    """This table's own instance partitions over ``servers`` (sorted ids), or None when it is
    not replica-group based. BadRequest when the tenant has too few servers."""
    if config.table_type != "OFFLINE" or _shared_name(config):
        return None
    spec = _replica_group_config(config)
    if spec is None:
        return None
    servers = sorted(servers)
    groups = _int(spec, "numReplicaGroups", config.segments_config.replication)
    per_group = _int(spec, "numInstancesPerReplicaGroup", len(servers) // max(groups, 1))
    if groups < 1 or per_group < 1 or groups * per_group > len(servers):
        raise BadRequest(
            f"{config.table_name_with_type} needs {groups} replica group(s) of {per_group} "
            f"server(s), but its tenant has {len(servers)} enabled server(s)"
        )
    partitions = _int(spec, "numPartitions", 1)
    per_partition = min(_int(spec, "numInstancesPerPartition", per_group), per_group)
    grid = []
    for p in range(partitions):
        row = []
        for r in range(groups):
            members = servers[r * per_group : (r + 1) * per_group]
            row.append(sorted(members[(p * per_partition + j) % per_group]
                              for j in range(per_partition)))  # fmt: skip
        grid.append(row)
    return ReplicaGroupPlacement(config.table_name_with_type, grid, spec.get("partitionColumn"))


def placement_for(store: ClusterStore, config: TableConfig) -> ReplicaGroupPlacement | None:
    """The instance partitions this table's segments follow: the ones named by
    ``instancePartitionsMap.OFFLINE``, else its own; None for a balanced table."""
    if config.table_type != "OFFLINE":
        return None
    shared = _shared_name(config)
    name = shared or config.table_name_with_type
    record, _ = store.get_record(_path(store, name))
    if record is None:
        if shared:
            raise BadRequest(
                f"instancePartitionsMap.OFFLINE of {config.table_name_with_type} names instance "
                f"partitions {shared!r}, which do not exist; create that table first"
            )
        return None
    placement = ReplicaGroupPlacement.from_record(record)
    column = _replica_group_config(config) or {}
    return dataclasses.replace(placement, column=column.get("partitionColumn") or placement.column)


def publish_placement(store: ClusterStore, config: TableConfig, servers: list[str]) -> None:
    """Compute and store the table's own instance partitions (a no-op for other tables). As
    in Pinot, partitions shared through ``instancePartitionsMap`` need to exist only when a
    segment is assigned."""
    placement = compute_placement(config, servers)
    if placement is not None:
        store.ensure_path(f"{store.paths.property_store}/INSTANCE_PARTITIONS")
        store.put_record(_path(store, placement.name), placement.to_record())


def delete_placement(store: ClusterStore, table_with_type: str) -> None:
    store.delete(_path(store, table_with_type))


def segment_placement(store: ClusterStore, config: TableConfig, metadata) -> Placed | None:
    """Where a new segment of ``config`` goes when the table is replica-group based: from its
    ``SegmentMetadata``'s partitions of the partition column. None for a balanced table."""
    placement = placement_for(store, config)
    if placement is None:
        return None
    column = metadata.columns.get(placement.column) if placement.column else None
    return placement.placed(metadata.segment_name, column.partitions if column else None)


def replica_group_target(
    store: ClusterStore,
    config: TableConfig,
    ideal: ResourceAssignment,
    servers: list[str],
    *,
    save: bool,
) -> dict[str, dict[str, str]] | None:
    """The rebalance target of a replica-group table over the current ``servers``: its
    instance partitions recomputed (kept when shared from another table; stored when
    ``save``), then every segment placed as a new one would be. None for a balanced table."""
    own = compute_placement(config, servers)
    placement = own or placement_for(store, config)
    if placement is None:
        return None
    if own is not None and save:
        store.ensure_path(f"{store.paths.property_store}/INSTANCE_PARTITIONS")
        store.put_record(_path(store, own.name), own.to_record())
    target = ResourceAssignment(ideal.resource)
    for segment in sorted(ideal.segments):
        placed = placement.placed(segment, _zk_partitions(store, ideal.resource, segment,
                                                          placement.column))  # fmt: skip
        chosen = assign_segment(target, servers, len(placed.candidates), placed)
        target.segments[segment] = dict.fromkeys(chosen, SegmentState.ONLINE.value)
    return target.segments


def _zk_partitions(store: ClusterStore, resource: str, segment: str, column: str | None):
    meta = store.segment_metadata(resource, segment)
    raw = (meta.extra if meta is not None else {}).get("segment.partition.metadata")
    if not raw or not column:
        return None
    try:
        entry = json.loads(raw).get("columnPartitionMap", {}).get(column) or {}
    except ValueError:
        return None
    return entry.get("partitions")
