"""Read-only views of a table's state: ideal state, external view, size, segment status,
instances (``GET /tables/{t}/...``) and segment listings (``GET /segments/{t}``)."""

from __future__ import annotations

from cluster import models
from cluster.logic.cluster_view import (
    instances_with_tag,
    parsed,
    table_broker_tag,
    table_server_tag,
    table_types,
)
from controller.errors import NotFound
from engine.clusterstate import (
    SERVING_STATES,
    ClusterStore,
    InstanceType,
    SegmentState,
    split_table_name,
    table_name_with_type,
)


def existing_types(table: str, table_type: str | None) -> list[str]:
    types = table_types(table, table_type)
    if not types:
        suffix = f"_{table_type.upper()}" if table_type else ""
        raise NotFound(f"Table {table}{suffix} does not exist")
    return types


def _raw(table: str) -> str:
    return split_table_name(table)[0]


def assignment_by_type(store: ClusterStore, table: str, table_type: str | None, which: str) -> dict:
    """Pinot's ``{"OFFLINE": {seg: {inst: state}} | null, "REALTIME": ... | null}``."""
    types = existing_types(table, table_type)
    out: dict = {}
    for kind in ("OFFLINE", "REALTIME"):
        if table_type and kind != table_type.upper():
            continue
        resource = table_name_with_type(_raw(table), kind)
        record = None
        if kind in types:
            record = (
                store.ideal_state(resource) if which == "ideal" else store.external_view(resource)
            )
        out[kind] = record.segments if record is not None else None
    return out


def segment_status(store: ClusterStore, table: str, table_type: str | None) -> list[dict]:
    """Per segment: GOOD (external view matches the ideal state), BAD (a replica in ERROR) or
    UPDATING, with the replicas online and expected."""
    out = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(_raw(table), kind)
        ideal = store.ideal_state(resource)
        view = store.external_view(resource)
        view_segments = view.segments if view else {}
        for segment, replicas in sorted((ideal.segments if ideal else {}).items()):
            seen = view_segments.get(segment, {})
            if SegmentState.ERROR.value in seen.values():
                status = "BAD"
            elif seen == replicas:
                status = "GOOD"
            else:
                status = "UPDATING"
            out.append(
                {
                    "segmentName": segment,
                    "segmentStatus": status,
                    "tableNameWithType": resource,
                    "replicasOnline": sum(1 for s in seen.values() if s in SERVING_STATES),
                    "replicasExpected": len(replicas),
                }
            )
    return out


def table_size(store: ClusterStore, table: str) -> dict:
    """Sizes from the segment metadata (compressed tar bytes per copy): ``reported`` counts the
    replicas online in the external view, ``estimated`` the replicas in the ideal state."""
    raw = _raw(table)
    types = existing_types(raw, None)
    out: dict = {"tableName": raw, "reportedSizeInBytes": 0, "estimatedSizeInBytes": 0,
                 "reportedSizePerReplicaInBytes": 0, "offlineSegments": None,
                 "realtimeSegments": None}  # fmt: skip
    for kind in types:
        resource = table_name_with_type(raw, kind)
        ideal = store.ideal_state(resource)
        view = store.external_view(resource)
        part = {"reportedSizeInBytes": 0, "estimatedSizeInBytes": 0,
                "reportedSizePerReplicaInBytes": 0, "missingSegments": 0, "segments": {}}  # fmt: skip
        for segment, replicas in sorted((ideal.segments if ideal else {}).items()):
            meta = store.segment_metadata(resource, segment)
            size = meta.size_in_bytes if meta else 0
            online = [
                i
                for i, s in ((view.segments.get(segment, {}) if view else {}).items())
                if s in SERVING_STATES
            ]
            if not online:
                part["missingSegments"] += 1
            part["segments"][segment] = {
                "reportedSizeInBytes": size * len(online),
                "estimatedSizeInBytes": size * len(replicas),
                "maxReportedSizePerReplicaInBytes": size if online else 0,
                "serverInfo": {
                    i: {"segmentName": segment, "diskSizeInBytes": size} for i in online
                },
            }
            part["reportedSizeInBytes"] += size * len(online)
            part["estimatedSizeInBytes"] += size * len(replicas)
            part["reportedSizePerReplicaInBytes"] += size if online else 0
        out["offlineSegments" if kind == "OFFLINE" else "realtimeSegments"] = part
        for key in ("reportedSizeInBytes", "estimatedSizeInBytes", "reportedSizePerReplicaInBytes"):
            out[key] += part[key]
    return out


def table_instances(store: ClusterStore, table: str, table_type: str | None) -> dict:
    raw = _raw(table)
    out: dict = {"tableName": raw, "brokers": [], "server": []}
    for kind in existing_types(raw, table_type):
        config = parsed(models.TableConfig.objects.get(table_name=raw, table_type=kind))
        brokers = [c.instance_id for c in instances_with_tag(store, table_broker_tag(config))
                   if c.type is InstanceType.BROKER]  # fmt: skip
        servers = [c.instance_id for c in instances_with_tag(store, table_server_tag(config))
                   if c.type is InstanceType.SERVER]  # fmt: skip
        out["brokers"].append({"tableType": kind.lower(), "instances": brokers})
        out["server"].append({"tableType": kind.lower(), "instances": servers})
    return out


def segments_by_type(store: ClusterStore, table: str, table_type: str | None) -> list[dict]:
    """Pinot's ``[{"OFFLINE": [seg, ...]}, {"REALTIME": [...]}]``."""
    raw = _raw(table)
    out = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)
        ideal = store.ideal_state(resource)
        names = set(ideal.segments) if ideal else set()
        names |= set(store.segment_names(resource))
        out.append({kind: sorted(names)})
    return out


def segment_servers(store: ClusterStore, table: str, table_type: str | None) -> list[dict]:
    raw = _raw(table)
    out = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)
        ideal = store.ideal_state(resource)
        out.append(
            {
                "tableName": resource,
                "serverToSegmentsMap": ideal.segments_per_instance() if ideal else {},
            }
        )
    return out
