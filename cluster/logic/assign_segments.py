"""Balanced segment assignment (Pinot's default): each segment on ``replication`` distinct
servers, preferring the servers that hold the fewest of the table's segments."""

from __future__ import annotations

import dataclasses

from controller.errors import BadRequest
from engine.clusterstate import ResourceAssignment, SegmentState
from engine.clusterstate.segment_status import CONSUMING_GROUP, assignment_group


def segment_load(ideal: ResourceAssignment, servers: list[str]) -> dict[str, int]:
    """How many of the table's segments each server holds (0 for servers without any)."""
    load = dict.fromkeys(servers, 0)
    for replicas in ideal.segments.values():
        for instance in replicas:
            if instance in load:
                load[instance] += 1
    return load


def assign_segment(
    ideal: ResourceAssignment,
    servers: list[str],
    replication: int,
    placement: Placed | None = None,
) -> list[str]:
    """The ``replication`` least-loaded servers (ties by id) for one new segment; with a
    replica-group ``placement``, one server in each replica group of its partition."""
    if placement is not None:
        return _assign_replica_groups(ideal, placement)
    if replication > len(servers):
        raise BadRequest(
            f"cannot assign a segment of {ideal.resource}: replication {replication} is higher "
            f"than the {len(servers)} enabled server(s) of its tenant"
        )
    load = segment_load(ideal, servers)
    return sorted(servers, key=lambda s: (load[s], s))[:replication]


@dataclasses.dataclass(frozen=True)
class Placed:
    """A segment's replica-group choices: ``candidates[r]`` are the servers of its partition
    in replica group ``r`` (``instance_partitions.ReplicaGroupPlacement``)."""

    candidates: list[list[str]]


def _assign_replica_groups(ideal: ResourceAssignment, placed: Placed) -> list[str]:
    """Pinot's replica-group assignment: the least-loaded position in replica group 0, and
    the server at the same position in every other group, so the groups mirror each other."""
    first = placed.candidates[0]
    load = segment_load(ideal, first)
    position = min(range(len(first)), key=lambda i: (load[first[i]], i))
    return [group[position % len(group)] for group in placed.candidates]


def rebalance_target(
    ideal: ResourceAssignment, servers: list[str], replication: int
) -> dict[str, dict[str, str]]:
    """The balanced assignment of every segment of ``ideal`` over ``servers``, moving as few
    replicas as possible: replicas on servers still in ``servers`` stay (up to
    ``replication``), missing replicas go to the least loaded servers, then single replicas
    move from the most to the least loaded server until their loads differ by at most one.
    CONSUMING replicas keep their state."""
    if not ideal.segments:
        return {}
    if replication > len(servers):
        raise BadRequest(
            f"cannot rebalance {ideal.resource}: replication {replication} is higher than the "
            f"{len(servers)} enabled server(s) of its tenant"
        )
    valid = set(servers)
    target: dict[str, dict[str, str]] = {}
    for segment, replicas in sorted(ideal.segments.items()):
        kept = [(i, st) for i, st in sorted(replicas.items()) if i in valid][:replication]
        target[segment] = dict(kept)
    load = dict.fromkeys(servers, 0)
    for replicas in target.values():
        for instance in replicas:
            load[instance] += 1
    for segment, replicas in target.items():
        state = _serving_state(ideal.segments[segment])
        while len(replicas) < replication:
            chosen = min((s for s in servers if s not in replicas), key=lambda s: (load[s], s))
            replicas[chosen] = state
            load[chosen] += 1
    while True:
        busiest = max(servers, key=lambda s: (load[s], s))
        idlest = min(servers, key=lambda s: (load[s], s))
        if load[busiest] - load[idlest] <= 1:
            return target
        # busiest holds more segments than idlest, so one of them is not on idlest
        segment = next(
            seg
            for seg, replicas in target.items()
            if busiest in replicas and idlest not in replicas
        )
        target[segment][idlest] = target[segment].pop(busiest)
        load[busiest] -= 1
        load[idlest] += 1


def _serving_state(replicas: dict[str, str]) -> str:
    """The state a segment's new replica gets: CONSUMING for a consuming segment (no ONLINE
    replica, a CONSUMING one), else ONLINE, as Pinot's rebalancer assigns them."""
    if assignment_group(replicas) == CONSUMING_GROUP:
        return SegmentState.CONSUMING.value
    return SegmentState.ONLINE.value
