"""Replica-group routing: a query's segments all go to one replica group, chosen by the
request id; a segment whose replica there is down or failing goes to another group's."""

from __future__ import annotations

from engine.broker.pruning import SegmentInfo
from engine.broker.routes import RoutingSnapshot, ServerAddress, TableRoute
from engine.broker.selection import BalancedSelector

# two replica groups of two servers: S1, S2 (group 0) and S3, S4 (group 1); every segment
# has one replica in each group, its partition's server
GROUP = {"S1": 0, "S2": 0, "S3": 1, "S4": 1}
SEGMENTS = {f"p{p}_{i}": (f"S{1 + p}", f"S{3 + p}") for p in range(2) for i in range(5)}


class _Health:
    def __init__(self, bad=()):
        self.bad = set(bad)

    def is_healthy(self, instance_id):
        return instance_id not in self.bad


def route(selector: str) -> TableRoute:
    infos = {name: SegmentInfo(name) for name in SEGMENTS}
    return TableRoute("t_OFFLINE", SEGMENTS, infos, instance_selector=selector)


def snapshot(live=tuple(GROUP)) -> RoutingSnapshot:
    return RoutingSnapshot({}, {s: ServerAddress(s, "h", 1) for s in GROUP}, frozenset(live))


def test_each_query_uses_one_replica_group_and_the_groups_alternate():
    selector = BalancedSelector(_Health())
    for name in ("replicaGroup", "strictReplicaGroup", "multiStageReplicaGroup"):
        used = []
        for request_id in range(4):
            assignment, unavailable = selector.select(
                route(name), sorted(SEGMENTS), snapshot(), request_id
            )
            assert not unavailable
            assert sum(len(s) for s in assignment.values()) == len(SEGMENTS)
            groups = {GROUP[server] for server in assignment}
            assert len(groups) == 1, (name, assignment)
            used.append(groups.pop())
        assert used == [0, 1, 0, 1]


def test_balanced_tables_spread_one_query_over_both_groups():
    assignment, _ = BalancedSelector(_Health()).select(
        route("balanced"), sorted(SEGMENTS), snapshot(), 0
    )
    assert {GROUP[server] for server in assignment} == {0, 1}


def test_a_dead_or_failing_replica_falls_back_to_the_other_group():
    selector = BalancedSelector(_Health(bad={"S2"}))
    assignment, unavailable = selector.select(
        route("replicaGroup"), sorted(SEGMENTS), snapshot(live=("S1", "S2", "S4")), 0
    )
    assert not unavailable
    # group 0 is chosen; partition 1's replica there (S2) is failing, so it goes to S4
    assert assignment == {"S1": [f"p0_{i}" for i in range(5)], "S4": [f"p1_{i}" for i in range(5)]}
    assignment, unavailable = selector.select(
        route("replicaGroup"), sorted(SEGMENTS), snapshot(live=("S1",)), 1
    )
    assert unavailable == [f"p1_{i}" for i in range(5)]
    assert assignment == {"S1": [f"p0_{i}" for i in range(5)]}


def llc(partition: int, sequence: int) -> str:
    return f"t__{partition}__{sequence}__20260101T0000Z"


def test_strict_selection_reads_a_partition_from_one_server():
    """An upsert table's segments of one partition from one server (its valid docs are its
    own): a segment missing on a replica moves the whole partition to a server that has it,
    and with no server holding them all the rest is unavailable rather than mixed."""
    servers = {
        llc(0, 0): ("S1", "S3"), llc(0, 1): ("S1", "S3"), llc(0, 2): ("S3",),  # new on S3 only
        llc(1, 0): ("S2", "S4"), llc(1, 1): ("S2", "S4"),
    }  # fmt: skip
    table = TableRoute("t_REALTIME", servers, {n: SegmentInfo(n) for n in servers},
                       instance_selector="strictReplicaGroup")  # fmt: skip
    selector = BalancedSelector(_Health())
    for request_id in range(4):
        assignment, unavailable = selector.select(table, sorted(servers), snapshot(), request_id)
        assert not unavailable
        assert sorted(assignment["S3"]) == [llc(0, 0), llc(0, 1), llc(0, 2)]
        partition_1 = [s for s, segs in assignment.items() if llc(1, 0) in segs]
        assert assignment[partition_1[0]] == [llc(1, 0), llc(1, 1)]
    # S3 dies: no server has all of partition 0; S1 serves what it has, the rest is missing
    assignment, unavailable = selector.select(
        table, sorted(servers), snapshot(("S1", "S2", "S4")), 0
    )
    assert unavailable == [llc(0, 2)]
    assert assignment["S1"] == [llc(0, 0), llc(0, 1)]
    # a failing server: the partition moves whole to the healthy replica
    failing = BalancedSelector(_Health(bad={"S2"}))
    assignment, _ = failing.select(table, sorted(servers), snapshot(), 0)
    assert assignment["S4"] == [llc(1, 0), llc(1, 1)]
