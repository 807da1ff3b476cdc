"""The broker's view of a table's segments by partition, for colocated joins: only a segment
of exactly one partition, recorded with the table's function, can be placed by partition."""

from __future__ import annotations

from engine.broker.multistage import segments_by_partition
from engine.broker.pruning import ColumnPartitioning, SegmentInfo
from engine.broker.routing import RoutingSnapshot, TableRoute
from engine.spi.partition import partition_function

MURMUR = ColumnPartitioning("Murmur", 4)


def snapshot(segments: dict[str, SegmentInfo], live=("s1", "s2")) -> RoutingSnapshot:
    route = TableRoute("t_OFFLINE", {name: ("s1", "s2") for name in segments}, segments,
                       partitioning={"k": MURMUR})  # fmt: skip
    return RoutingSnapshot({"t_OFFLINE": route}, {}, frozenset(live))


def seg(name: str, partitions: set[int], **functions) -> SegmentInfo:
    return SegmentInfo(name, partitions={"k": frozenset(partitions)},
                       partition_functions=functions)  # fmt: skip


def test_segments_by_partition_with_their_live_replicas():
    found, reason = segments_by_partition(snapshot({"a": seg("a", {0}), "b": seg("b", {3})}, ("s2",)),
                                "t", "k")  # fmt: skip
    assert reason == ""
    assert found == {0: [("t_OFFLINE", "a", ("s2",))], 3: [("t_OFFLINE", "b", ("s2",))]}


def test_a_segment_of_several_partitions_or_none_cannot_be_placed():
    found, reason = segments_by_partition(snapshot({"a": seg("a", {0, 1})}), "t", "k")
    assert found is None and "segment a does not hold exactly one partition of k" in reason
    found, _ = segments_by_partition(snapshot({"a": SegmentInfo("a")}), "t", "k")
    assert found is None


def test_a_segment_partitioned_by_another_function_cannot_be_placed():
    other = {"k": partition_function("Modulo", 4)}
    found, reason = segments_by_partition(snapshot({"a": seg("a", {0}, **other)}), "t", "k")
    assert found is None and "another function" in reason
    same = {"k": partition_function("murmur2", 4)}  # Pinot's alias of Murmur
    found, _ = segments_by_partition(snapshot({"a": seg("a", {0}, **same)}), "t", "k")
    assert found == {0: [("t_OFFLINE", "a", ("s1", "s2"))]}


def test_a_table_not_partitioned_on_the_column():
    found, reason = segments_by_partition(snapshot({"a": seg("a", {0})}), "t", "other")
    assert found is None and "not partitioned on other" in reason
