"""Broker pruning, time boundary, partition functions and replica selection (pure units)."""

from __future__ import annotations

import pytest

from engine.broker.broker_query import parse_query_options
from engine.broker.errors import BadBrokerRequest
from engine.broker.pruning import ColumnPartitioning, SegmentInfo, prune, time_intervals
from engine.broker.routes import RoutingSnapshot, ServerAddress, TableRoute
from engine.broker.selection import BalancedSelector
from engine.broker.time_boundary import compute_time_boundary
from engine.query.plan import compile_query
from engine.spi.datetime_format import DateTimeFormat

DAY = 86_400_000


def where(sql_filter: str):
    return compile_query(f"SELECT COUNT(*) FROM t WHERE {sql_filter}").filter


def days(name: str, start: int, end: int, **partitions) -> SegmentInfo:
    return SegmentInfo(name, start * DAY, end * DAY,
                       {k: frozenset(v) for k, v in partitions.items()})  # fmt: skip


SEGMENTS = [days("s1", 10, 19), days("s2", 20, 29), days("s3", 30, 39)]


@pytest.mark.parametrize(
    ("sql_filter", "kept"),
    [
        ("d = 25", ["s2"]),
        ("d BETWEEN 19 AND 20", ["s1", "s2"]),
        ("d > 29", ["s2", "s3"]),  # strict bounds stay inclusive: never wrongly pruned
        ("d >= 30", ["s3"]),
        ("d < 10", ["s1"]),
        ("d IN (5, 35)", ["s3"]),
        ("d = 15 OR d = 35", ["s1", "s3"]),
        ("d = 15 OR x = 1", ["s1", "s2", "s3"]),  # one OR branch does not constrain d
        ("d >= 20 AND d <= 25 AND x = 'a'", ["s2"]),
        ("NOT d = 15", ["s1", "s2", "s3"]),
        ("d > 40", []),
        ("d BETWEEN 30 AND 20", []),
    ],
)
def test_time_pruning(sql_filter, kept):
    got = prune(SEGMENTS, where(sql_filter), time_column="d", time_unit_ms=DAY, partitioning={})
    assert [s.name for s in got] == kept


def test_a_segment_without_time_metadata_is_never_pruned():
    segments = [SegmentInfo("unknown"), days("s1", 10, 19)]
    got = prune(segments, where("d = 50"), time_column="d", time_unit_ms=DAY, partitioning={})
    assert [s.name for s in got] == ["unknown"]


def test_time_intervals_in_milliseconds():
    assert time_intervals(where("d = 2"), "d", DAY) == [(2 * DAY, 2 * DAY)]
    assert time_intervals(where("x = 2"), "d", DAY) is None


def test_partition_pruning_on_eq_and_in():
    partitioning = {"member": ColumnPartitioning("Modulo", 4)}
    segments = [days("p0", 1, 1, member=[0]), days("p1", 1, 1, member=[1]),
                SegmentInfo("no-partition-info", DAY, DAY)]  # fmt: skip

    def kept(sql_filter):
        got = prune(segments, where(sql_filter), time_column=None, time_unit_ms=None,
                    partitioning=partitioning)  # fmt: skip
        return [s.name for s in got]

    assert kept("member = 4") == ["p0", "no-partition-info"]
    assert kept("member IN (1, 5)") == ["p1", "no-partition-info"]
    assert kept("member = 2") == ["no-partition-info"]
    assert kept("member = 4 OR other = 1") == ["p0", "p1", "no-partition-info"]
    assert kept("member > 1") == ["p0", "p1", "no-partition-info"]


def route(segments: dict[str, tuple[str, ...]], infos=None, **kwargs) -> TableRoute:
    infos = infos or {name: SegmentInfo(name) for name in segments}
    return TableRoute("t_OFFLINE", segments, infos, **kwargs)


def test_time_boundary_is_max_end_minus_one_push_unit():
    infos = {"a": days("a", 10, 19), "b": days("b", 20, 29), "gone": days("gone", 50, 60)}
    offline = route({"a": ("S1",), "b": ("S1",), "gone": ()}, infos, time_column="d",
                    time_format=DateTimeFormat.parse("1:DAYS:EPOCH"))  # fmt: skip
    boundary = compute_time_boundary(offline)
    assert boundary.value == 28  # 29 days - 1 day; "gone" has no serving replica
    assert boundary.to_json() == {"timeColumn": "d", "timeValue": "28"}
    assert boundary.clause("OFFLINE") == {"column": "d", "op": "<=", "value": 28}
    assert boundary.clause("REALTIME")["op"] == ">"
    hourly = route({"a": ("S1",)}, {"a": days("a", 1, 2)}, time_column="ts",
                   time_format=DateTimeFormat.parse("1:MILLISECONDS:EPOCH"),
                   push_frequency_ms=3_600_000)  # fmt: skip
    assert compute_time_boundary(hourly).value == 2 * DAY - 3_600_000


def test_no_time_boundary_without_time_column_or_segments():
    assert compute_time_boundary(route({"a": ("S1",)})) is None
    empty = route({}, time_column="d", time_format=DateTimeFormat.parse("1:DAYS:EPOCH"))
    assert compute_time_boundary(empty) is None


class _Health:
    def __init__(self, bad=()):
        self.bad = set(bad)

    def is_healthy(self, instance_id):
        return instance_id not in self.bad


def snapshot(live, servers=("S1", "S2", "S3")) -> RoutingSnapshot:
    return RoutingSnapshot({}, {s: ServerAddress(s, "h", 1) for s in servers}, frozenset(live))


def test_selection_spreads_segments_and_rotates_between_queries():
    r = route({f"seg{i}": ("S1", "S2") for i in range(6)})
    selector = BalancedSelector(_Health())
    first, unavailable = selector.select(r, sorted(r.segment_servers), snapshot({"S1", "S2"}), 0)
    assert not unavailable
    assert {k: len(v) for k, v in first.items()} == {"S1": 3, "S2": 3}
    second, _ = selector.select(r, sorted(r.segment_servers), snapshot({"S1", "S2"}), 1)
    assert first["S1"] == second["S2"]


def test_selection_avoids_dead_and_unhealthy_servers():
    r = route({"a": ("S1", "S2"), "b": ("S2",), "c": ("S3",)})
    selector = BalancedSelector(_Health(bad={"S2"}))
    assignment, unavailable = selector.select(r, ["a", "b", "c"], snapshot({"S1", "S2"}), 0)
    # a avoids unhealthy S2; b has only S2, so it still goes there; c's server is not live
    assert assignment == {"S1": ["a"], "S2": ["b"]}
    assert unavailable == ["c"]


def test_query_options_parsing():
    assert parse_query_options("timeoutMs=100; useStarTree = false") == {
        "timeoutMs": "100", "useStarTree": "false"}  # fmt: skip
    assert parse_query_options({"timeoutMs": 5}) == {"timeoutMs": "5"}
    assert parse_query_options(None) == {}
    with pytest.raises(BadBrokerRequest, match="not key=value"):
        parse_query_options("timeoutMs")
    with pytest.raises(BadBrokerRequest):
        parse_query_options(["x"])
