"""Where a REALTIME table's completed segments belong: on the servers tagged
``tenants.tagOverrideConfig.realtimeCompleted`` when that differs from the consuming servers'
tag. Read by the upload path, the rebalancer and the SegmentRelocator alike."""

from __future__ import annotations

from cluster.logic.assign_segments import rebalance_target
from cluster.logic.cluster_view import instances_with_tag, replication_of, table_server_tag
from controller.errors import BadRequest
from engine.clusterstate import ClusterStore, InstanceType, ResourceAssignment
from engine.clusterstate.segment_status import COMPLETED_GROUP, assignment_group

COMPLETED_KEY = "realtimeCompleted"


def completed_server_tag(config) -> str | None:
    """The tag of a REALTIME table's completed-segment servers when it differs from its
    consuming servers' tag (relocation is on); None otherwise (and for OFFLINE tables)."""
    if config.table_type != "REALTIME":
        return None
    tag = str(config.tenants.tag_override_config.get(COMPLETED_KEY) or "").strip()
    return tag if tag and tag != table_server_tag(config) else None


def completed_servers(store: ClusterStore, tag: str) -> list[str]:
    return [c.instance_id for c in instances_with_tag(store, tag) if c.type is InstanceType.SERVER]


def completed_target(store: ClusterStore, config, ideal: ResourceAssignment | None) -> dict:
    """segment -> {server: ONLINE} for every completed segment of ``ideal`` (one with an
    ONLINE replica: ``assignment_group``) on the completed servers (replicas already there
    stay; the rest are balanced over them). Empty when relocation is off. BadRequest naming
    the tag when it has too few servers."""
    tag = completed_server_tag(config)
    if tag is None or ideal is None:
        return {}
    completed = {s: r for s, r in ideal.segments.items() if assignment_group(r) == COMPLETED_GROUP}
    if not completed:
        return {}
    servers = completed_servers(store, tag)
    replication = replication_of(config, servers)
    if replication > len(servers):
        raise BadRequest(
            f"{config.table_name_with_type}: tenants.tagOverrideConfig.{COMPLETED_KEY} is "
            f"{tag!r}, which {len(servers)} enabled server(s) carry; {replication} replicas "
            f"need as many"
        )
    subset = ResourceAssignment(ideal.resource, segments=completed)
    return rebalance_target(subset, servers, replication)
