"""Colocated joins: a join of two tables partitioned alike on its key moves no rows.

When both sides of an equi-join are scans (with filters and projections) of tables whose
``segmentPartitionConfig.columnPartitionMap`` partitions them on the join key with the same
function, function config and partition count, every pair of matching rows lies in the same
partition of both tables. The planner then sends each side through a ``partitioned``
exchange (Pinot's ``[PARTITIONED]`` 1:1 send) instead of a hash shuffle, and placement
(``place_colocated``) runs one join worker per partition, on a server that holds every
segment of that partition of both tables, next to the two leaf workers that read them: the
rows go from leaf to join in memory.

Pinot needs ``tableOptions(partition_key=..., partition_size=...)`` on both tables or
``SET inferPartitionHint=true``; here the table configs are read by default (what the
metadata proves is safe), ``SET inferPartitionHint=false`` asks for the hints as in Pinot, and
``joinOptions(is_colocated_by_join_keys='false')`` or a distribution hint turns it off. Unlike
Pinot, ``is_colocated_by_join_keys='true'`` never colocates tables that are not partitioned
alike (that would drop rows silently); it also colocates semi and anti joins, which otherwise
use a dynamic filter. When the segments of a partition are on different servers (or a
segment has no single recorded partition), placement falls back to the hash shuffle.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from engine.common.errors import ConfigError
from engine.multistage.logical import Filter, Join, LeafScan, Node, Project
from engine.multistage.options import option
from engine.spi.partition import partition_function

KINDS = ("inner", "left", "right", "full", "asof", "left_asof")  # + semi/anti when hinted


@dataclasses.dataclass(frozen=True)
class Partitioned:
    """A join side that reads one partitioned table, keyed on its partition column."""

    leaf: LeafScan
    column: str


def colocated(join: Join, left: Node, right: Node, left_keys: list[str],
              right_keys: list[str], options: dict[str, str]) -> tuple[str, str] | None:  # fmt: skip
    """The partition columns (left, right) when ``join`` (sides already planned) may run
    without moving rows, else None."""
    hint = join.hints.get("is_colocated_by_join_keys", "").lower()
    if hint == "false" or join.hints.get("left_distribution_type") or \
            join.hints.get("right_distribution_type"):  # fmt: skip
        return None
    if join.kind not in KINDS and not (hint == "true" and join.kind in ("semi", "anti")):
        return None
    for lk, rk in zip(left_keys, right_keys, strict=True):
        a, b = partitioned_side(left, lk), partitioned_side(right, rk)
        if a is None or b is None or not same_partitioning(a, b):
            continue
        inferred = option(options, "inferPartitionHint", "true").lower() != "false"
        if hint == "true" or inferred or all("partition_key" in s.leaf.hints for s in (a, b)):
            return a.column, b.column
    return None


def partitioned_side(node: Node, key: str) -> Partitioned | None:
    """The scan under ``node`` when ``key`` is its table's partition column, passed up
    unchanged through filters and projections (anything else, or an exchange, is not)."""
    while True:
        if isinstance(node, Filter):
            node = node.input
        elif isinstance(node, Project):
            exprs = {f.id: e for f, e in zip(node.fields, node.exprs, strict=True)}
            expr = exprs.get(key)
            if not isinstance(expr, exp.Column):
                return None
            key, node = expr.name, node.input
        elif isinstance(node, LeafScan):
            table = node.table
            columns = {f.id: c for f, c in zip(node.fields, node.columns, strict=True)}
            column = columns.get(key)
            if column is None or table.is_dim_table or table.partition_column is None or \
                    column.lower() != table.partition_column.lower():  # fmt: skip
                return None
            return Partitioned(node, column)
        else:
            return None


def same_partitioning(a: Partitioned, b: Partitioned) -> bool:
    """Same function (Pinot's aliases and function config included), same partition count,
    and keys of the same type (the functions hash a value's text)."""
    ta, tb = a.leaf.table, b.leaf.table
    if ta.columns[a.column][0] != tb.columns[b.column][0] or not ta.num_partitions:
        return False
    try:
        fa = partition_function(ta.partition_function, ta.num_partitions,
                                dict(ta.partition_function_config))  # fmt: skip
        fb = partition_function(tb.partition_function, tb.num_partitions,
                                dict(tb.partition_function_config))  # fmt: skip
    except ConfigError:  # a config the broker could not read never colocates
        return False
    return fa == fb


# --- placement -----------------------------------------------------------------------------
# partitions(raw table, column) -> ({partition: [(table_TYPE, segment, live replicas)]}, "")
# or (None, why the table's segments cannot be told apart by partition)
Partitions = dict[int, list[tuple[str, str, tuple[str, ...]]]]


@dataclasses.dataclass(frozen=True)
class PartitionWorker:
    partition: int
    server: str
    segments: list[dict[str, list[str]]]  # per join side: {table_TYPE: segments}


def assign_partitions(tables: list[tuple[str, str]], partitions,
                      live: set[str]) -> tuple[list[PartitionWorker] | None, str]:  # fmt: skip
    """One worker per partition of the join's sides (``tables``: (raw table, partition
    column) each), on a server that serves every segment of that partition of all of them,
    spreading partitions over such servers; (None, the reason) when some partition has none."""
    sides: list[Partitions] = []
    for table, column in tables:
        found, reason = partitions(table, column)
        if found is None:
            return None, f"{table}: {reason}"
        sides.append(found)
    ids = sorted({p for side in sides for p in side})
    if not ids:
        return None, "the tables have no segments"
    load = dict.fromkeys(sorted(live), 0)
    out = []
    for p in ids:
        candidates = set(live)
        for side in sides:
            for _, _, replicas in side.get(p, []):
                candidates &= set(replicas)
        if not candidates:
            names = " and ".join(sorted({t for t, _ in tables}))
            return None, f"no server holds every segment of partition {p} of {names}"
        server = min(sorted(candidates), key=lambda s: load[s])
        load[server] += 1
        segments = []
        for side in sides:
            by_table: dict[str, list[str]] = {}
            for resource, segment, _ in side.get(p, []):
                by_table.setdefault(resource, []).append(segment)
            segments.append({t: sorted(s) for t, s in by_table.items()})
        out.append(PartitionWorker(p, server, segments))
    return out, ""
