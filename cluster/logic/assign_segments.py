"""Balanced segment assignment (Pinot's default): each segment on ``replication`` distinct
servers, preferring the servers that hold the fewest of the table's segments."""

from __future__ import annotations

import math

from cluster.errors import BadRequest
from engine.clusterstate import ResourceAssignment, SegmentState


def segment_load(ideal: ResourceAssignment, servers: list[str]) -> dict[str, int]:
    """How many of the table's segments each server holds (0 for servers without any)."""
    load = dict.fromkeys(servers, 0)
    for replicas in ideal.segments.values():
        for instance in replicas:
            if instance in load:
                load[instance] += 1
    return load


def assign_segment(ideal: ResourceAssignment, servers: list[str], replication: int) -> list[str]:
    """The ``replication`` least-loaded servers (ties by id) for one new segment."""
    if replication > len(servers):
        raise BadRequest(
            f"cannot assign a segment of {ideal.resource}: replication {replication} is higher "
            f"than the {len(servers)} enabled server(s) of its tenant"
        )
    load = segment_load(ideal, servers)
    return sorted(servers, key=lambda s: (load[s], s))[:replication]


def rebalance_target(
    ideal: ResourceAssignment, servers: list[str], replication: int
) -> dict[str, dict[str, str]]:
    """The balanced assignment of every segment of ``ideal`` over ``servers``, moving as few
    replicas as possible: a replica stays where it is while its server holds at most
    ceil(total replicas / servers) of the table's segments; the rest go to the least loaded
    servers that do not hold the segment yet. CONSUMING replicas keep their state."""
    if not ideal.segments:
        return {}
    if replication > len(servers):
        raise BadRequest(
            f"cannot rebalance {ideal.resource}: replication {replication} is higher than the "
            f"{len(servers)} enabled server(s) of its tenant"
        )
    cap = math.ceil(len(ideal.segments) * replication / len(servers))
    load = dict.fromkeys(servers, 0)
    target: dict[str, dict[str, str]] = {}
    for segment, replicas in sorted(ideal.segments.items()):
        kept = {}
        for instance, state in sorted(replicas.items()):
            if instance in load and load[instance] < cap and len(kept) < replication:
                kept[instance] = state
                load[instance] += 1
        target[segment] = kept
    for segment, kept in target.items():
        state = _serving_state(ideal.segments[segment])
        while len(kept) < replication:
            candidates = [s for s in servers if s not in kept]
            chosen = min(candidates, key=lambda s: (load[s], s))
            kept[chosen] = state
            load[chosen] += 1
    return target


def _serving_state(replicas: dict[str, str]) -> str:
    if SegmentState.CONSUMING.value in replicas.values():
        return SegmentState.CONSUMING.value
    return SegmentState.ONLINE.value
