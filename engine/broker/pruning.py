"""Broker-side segment pruning from ZooKeeper segment metadata, before any server is asked.

* Time: the filter's constraint on the time column, as a union of intervals in epoch ms,
  against each segment's ``[segment.start.time, segment.end.time]`` (inclusive).
* Partition: EQ / IN on a ``segmentPartitionConfig`` column against the partitions recorded
  in the segment's ``segment.partition.metadata``, computed with the function (and its
  ``functionConfig``) recorded there, as Pinot's broker does, else the table's. The functions
  are ``engine.spi.partition``'s, the ones the segment writer used.

Only what the filter *requires* prunes: an OR prunes when all its branches do, NOT and
predicates on other columns never do. Anything unknown keeps the segment.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping

import orjson

from engine.common.errors import ConfigError
from engine.common.types import DataType
from engine.query.expressions import Expression, Function, Identifier, Literal
from engine.query.filter import to_leaf
from engine.spi.partition import PartitionFunction, partition_function, recorded_function

log = logging.getLogger(__name__)

Interval = tuple[float, float]  # inclusive epoch-ms bounds; +-inf for open ends


@dataclasses.dataclass(frozen=True)
class SegmentInfo:
    """What the broker knows of one segment: its time range in epoch ms (inclusive; None when
    unknown) and, per partitioned column, the partitions its values fall in and the function
    that computed them (None: recorded but unusable, so the column never prunes it; absent:
    the table's function applies)."""

    name: str
    start_ms: float | None = None
    end_ms: float | None = None
    partitions: dict[str, frozenset[int]] = dataclasses.field(default_factory=dict)
    partition_functions: dict[str, PartitionFunction | None] = dataclasses.field(
        default_factory=dict
    )
    num_docs: int = 0  # for the multi-stage planner's choice of the side to broadcast


@dataclasses.dataclass(frozen=True)
class ColumnPartitioning:
    """A table's ``columnPartitionMap`` entry, with the column's type from the schema (needed
    to turn a filter literal into the text the writer hashed; None: hash functions never
    prune at the broker)."""

    function: str
    num_partitions: int
    function_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    data_type: DataType | None = None

    def partition_function(self) -> PartitionFunction | None:
        try:
            return partition_function(self.function, self.num_partitions, self.function_config)
        except ConfigError:
            return None


def table_partitioning(column_map: Mapping, schema=None) -> dict[str, ColumnPartitioning]:
    """The pruning view of a ``columnPartitionMap``: values are ``ColumnPartitionConfig`` (from
    ``TableConfig``) or raw JSON entries; ``schema`` (an ``engine.spi.Schema``) gives types."""
    out = {}
    for column, spec in column_map.items():
        data_type = None
        if schema is not None and schema.has_column(column):
            data_type = schema.field(column).data_type
        try:
            if isinstance(spec, Mapping):
                name, num, config = (
                    spec["functionName"],
                    spec["numPartitions"],
                    spec.get("functionConfig"),
                )
            else:
                name, num, config = spec.function_name, spec.num_partitions, spec.function_config
            function = partition_function(str(name), int(num), config)
        except (KeyError, TypeError, ValueError, ConfigError):
            log.warning("ignoring the malformed partition config of column %s", column)
            continue
        out[column] = ColumnPartitioning(
            function.name, function.num_partitions, function.function_config, data_type
        )
    return out


def recorded_partitions(
    raw: str | None, segment: str = ""
) -> tuple[dict[str, frozenset[int]], dict[str, PartitionFunction | None]]:
    """Partitions and functions from Pinot's ``segment.partition.metadata`` JSON
    (``{"columnPartitionMap": {col: {functionName, numPartitions, partitions,
    functionConfig}}}``); empty when absent or unreadable."""
    partitions: dict[str, frozenset[int]] = {}
    functions: dict[str, PartitionFunction | None] = {}
    if not raw:
        return partitions, functions
    try:
        column_map = orjson.loads(raw).get("columnPartitionMap") or {}
        for column, spec in column_map.items():
            partitions[column] = frozenset(int(p) for p in spec.get("partitions") or [])
            functions[column] = recorded_function(
                spec.get("functionName"), spec.get("numPartitions"), spec.get("functionConfig")
            )
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        log.warning("segment %s: unreadable segment.partition.metadata", segment)
        return {}, {}
    return partitions, functions


def time_intervals(expr: Expression | None, column: str, unit_ms: float) -> list[Interval] | None:
    """The epoch-ms intervals the filter allows for ``column`` (whose values are counts of
    ``unit_ms``), or None when the filter does not constrain it."""
    if not isinstance(expr, Function):
        return None
    if expr.name == "and":
        result = None
        for arg in expr.args:
            got = time_intervals(arg, column, unit_ms)
            if got is not None:
                result = got if result is None else _intersect(result, got)
        return result
    if expr.name == "or":
        parts = [time_intervals(a, column, unit_ms) for a in expr.args]
        if any(p is None for p in parts):
            return None
        return _normalize([i for p in parts for i in p])
    if expr.name == "not":
        return None
    leaf = to_leaf(expr)
    if leaf.lhs != Identifier(column):
        return None
    try:
        values = [float(v) * unit_ms for v in leaf.operands]
    except (TypeError, ValueError):
        return None
    if not values:
        return None
    op = leaf.op
    # strict bounds are kept inclusive: that never prunes a segment that could match
    if op == "equals":
        return [(values[0], values[0])]
    if op == "in":
        return _normalize([(v, v) for v in values])
    if op == "between" and len(values) == 2:
        return [(values[0], values[1])] if values[0] <= values[1] else []
    if op == "less_than":
        return [(-math.inf, values[0])]
    if op == "less_than_or_equal":
        return [(-math.inf, values[0])]
    if op == "greater_than":
        return [(values[0], math.inf)]
    if op == "greater_than_or_equal":
        return [(values[0], math.inf)]
    return None


def _normalize(intervals: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for lo, hi in sorted(i for i in intervals if i[0] <= i[1]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return _normalize(out)


def overlaps(segment: SegmentInfo, intervals: list[Interval] | None) -> bool:
    if intervals is None or segment.start_ms is None or segment.end_ms is None:
        return True
    return any(lo <= segment.end_ms and segment.start_ms <= hi for lo, hi in intervals)


def partition_values(expr: Expression | None, column: str) -> list | None:
    """The values an EQ / IN required by the filter allows for ``column``, or None."""
    if not isinstance(expr, Function):
        return None
    if expr.name == "and":
        for arg in expr.args:
            got = partition_values(arg, column)
            if got is not None:
                return got
        return None
    if expr.name == "or":
        parts = [partition_values(a, column) for a in expr.args]
        if any(p is None for p in parts):
            return None
        return [v for p in parts for v in p]
    if expr.name in ("equals", "in"):
        leaf = to_leaf(expr)
        if leaf.lhs == Identifier(column) and leaf.operands:
            return list(leaf.operands)
    return None


def matches_partitions(
    segment: SegmentInfo,
    expr: Expression | None,
    config: dict[str, ColumnPartitioning],
    memo: dict | None = None,
) -> bool:
    """False when the filter's EQ / IN values on a partitioned column all fall in partitions the
    segment does not hold. ``memo`` carries work between the segments of one query."""
    memo = {} if memo is None else memo
    for column, partitioning in config.items():
        recorded = segment.partitions.get(column)
        if recorded is None:
            continue
        if column in segment.partition_functions:
            function = segment.partition_functions[column]
        else:
            if ("table", column) not in memo:
                memo["table", column] = partitioning.partition_function()
            function = memo["table", column]
        if function is None:
            continue
        if (column, function) not in memo:
            memo[column, function] = _wanted(expr, column, function, partitioning.data_type)
        wanted = memo[column, function]
        if wanted is not None and not wanted & recorded:
            return False
    return True


def _wanted(expr, column: str, function: PartitionFunction, data_type) -> frozenset[int] | None:
    """The partitions the filter's values for ``column`` fall in; None when any is unknown."""
    values = partition_values(expr, column)
    if values is None:
        return None
    wanted = {function.partition_of_literal(v, data_type) for v in values}
    return None if None in wanted else frozenset(wanted)


def prune(
    segments: list[SegmentInfo],
    expr: Expression | None,
    *,
    time_column: str | None,
    time_unit_ms: float | None,
    partitioning: dict[str, ColumnPartitioning],
) -> list[SegmentInfo]:
    """The segments that may hold rows matching ``expr``."""
    if expr is None or (isinstance(expr, Literal) and expr.value):
        return segments
    intervals = None
    if time_column and time_unit_ms:
        intervals = time_intervals(expr, time_column, time_unit_ms)
    memo: dict = {}
    return [
        s for s in segments
        if overlaps(s, intervals) and matches_partitions(s, expr, partitioning, memo)
    ]  # fmt: skip
