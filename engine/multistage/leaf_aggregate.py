"""Aggregations only the single-stage engine has (percentiles, HLL, theta sketches,
``FIRSTWITHTIME`` ...), over one table: the leaf stage runs the whole aggregation with the
single-stage engine on each server (its indexes, star-trees and mergeable states), the
states travel as one binary row per server, and the receiving stage merges them with the
single-stage reduce; the operators above see ordinary rows. Pinot's leaf stage does the
same through ``LeafStageToPinotQuery``.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from sqlglot import exp

from engine.multistage.clauses import conjuncts
from engine.multistage.logical import Aggregate, Filter, LeafScan, Node, Project
from engine.multistage.types import arrow_type
from engine.query.errors import QueryValidationError
from engine.query.intermediate import IntermediateResult
from engine.query.plan import ColumnInfo, QueryPlan
from engine.query.reduce import reduce

STATE_COLUMN = "$state"
STATE_SCHEMA = pa.schema([(STATE_COLUMN, pa.binary())])
NO_LIMIT = 2_147_483_647


@dataclasses.dataclass(eq=False)
class LeafAggregate(Node):
    """The single-stage aggregation of one table: ``sql`` in Pinot's dialect; ``fields``
    (keys then aggregations) have ``types`` (Pinot names)."""

    table: object  # TableInfo
    sql: str
    types: list[str]
    options: dict[str, str]  # the single-stage options of the leaf and of the merge


def as_leaf_aggregate(agg: Aggregate, compile_plan, options: dict[str, str]) -> LeafAggregate:
    """``agg`` (over filters and projections of one leaf scan) as a single-stage query;
    raises QueryValidationError when its input is anything else."""
    node, filters, mapping = agg.input, [], None
    projections: list[Project] = []
    while isinstance(node, Filter | Project):
        (filters if isinstance(node, Filter) else projections).append(node)
        node = node.input
    if not isinstance(node, LeafScan) or agg.grouping_sets is not None:
        raise QueryValidationError(
            "Aggregation functions of the single-stage engine (percentiles, HLL, sketches "
            "...) need a single table below them in the multi-stage engine"
        )
    mapping = {f.id: exp.column(c, quoted=True) for f, c in zip(node.fields, node.columns,
                                                                 strict=True)}  # fmt: skip
    for project in reversed(projections):
        mapping.update({f.id: _pinot(e, mapping) for f, e in zip(project.fields, project.exprs,
                                                                strict=True)})  # fmt: skip
    where = [_pinot(c, mapping) for f in filters for c in conjuncts(f.condition)]
    keys = [_pinot(k, mapping) for k in agg.keys]
    aggs = [_pinot(a, mapping) for a in agg.aggs]
    sql = "SELECT " + ", ".join(e.sql() for e in keys + aggs) + f' FROM "{node.table.name}"'
    if where:
        sql += " WHERE " + " AND ".join(f"({w.sql()})" for w in where)
    if keys:
        sql += " GROUP BY " + ", ".join(k.sql() for k in keys)
    sql += f" LIMIT {NO_LIMIT}"
    plan = compile_plan(sql, schema_columns(node.table))
    return LeafAggregate(agg.fields, node.table, sql, plan.column_types, options)


def _pinot(e: exp.Expression, mapping: dict[str, exp.Expression]) -> exp.Expression:
    def visit(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.name in mapping:
            return mapping[n.name].copy()
        return n

    return e.copy().transform(visit, copy=False)


def schema_columns(table) -> dict[str, ColumnInfo]:
    return {name: ColumnInfo(t, sv) for name, (t, sv) in table.columns.items()}


def schema_of(node: LeafAggregate) -> pa.Schema:
    return pa.schema([(f.id, arrow_type(t.removesuffix("_ARRAY")))
                      for f, t in zip(node.fields, node.types, strict=True)])  # fmt: skip


def states(plan: QueryPlan, execute, segments: list) -> pa.Table:
    """This server's single-stage result as one binary row."""
    result: IntermediateResult = execute(plan, segments)
    if plan.kind == "aggregation" and result.decoded_states(plan) is None:
        result.states = [fn.empty_state(1) for fn in plan.aggregations]
    return pa.table({STATE_COLUMN: pa.array([result.to_bytes(plan)], pa.binary())})


def merge(plan: QueryPlan, table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The merged rows of the servers' states (``states``), as ``schema``."""
    results = [IntermediateResult.from_bytes(b) for b in table.column(STATE_COLUMN).to_pylist()]
    if not results:
        results = [IntermediateResult(plan.kind)]
    response = reduce(plan, results)
    if response.get("exceptions") and "resultTable" not in response:
        raise QueryValidationError(response["exceptions"][0]["message"])
    rows = response["resultTable"]["rows"]
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    arrays = [pa.array([_value(v) for v in col]).cast(field.type, safe=False)
              if col else pa.array([], field.type)
              for col, field in zip(columns, schema, strict=True)]  # fmt: skip
    return pa.Table.from_arrays(arrays, schema=schema)


def _value(v):
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return v
