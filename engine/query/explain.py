"""EXPLAIN PLAN FOR: the operator tree per segment, with the access path each filter
predicate takes (sorted / inverted / range index or scan), segments with identical plans
grouped under one PLAN_START as Pinot does."""

from __future__ import annotations

from engine.query.expressions import Function, Literal, to_sql
from engine.query.filter import FilterEvaluator, to_leaf
from engine.query.plan import QueryPlan
from engine.query.pruning import prune_reason
from engine.query.response import broker_response
from engine.query.segment_view import SegmentView

_INDEX_LOOKUP = {"FILTER_SORTED_INDEX": "sorted_index", "FILTER_INVERTED_INDEX": "inverted_index",
                 "FILTER_RANGE_INDEX": "range_index"}  # fmt: skip


def segment_plans(plan: QueryPlan, segments: list) -> list[dict]:
    """Server side: the distinct per-segment operator lists with how many segments use each,
    as JSON-ready ``[{"operators": [[depth, text], ...], "numSegments": n}, ...]``."""
    counts: dict[tuple, int] = {}
    for segment in segments:
        lines = tuple(_segment_plan(plan, SegmentView(segment)))
        counts[lines] = counts.get(lines, 0) + 1
    return [
        {"operators": [list(line) for line in lines], "numSegments": n}
        for lines, n in counts.items()
    ]


def explain_response(plan: QueryPlan, server_plans: list[list[dict]]) -> dict:
    """Broker side: merge the servers' ``segment_plans`` into Pinot's EXPLAIN result table
    (Operator, Operator_Id, Parent_Id)."""
    merged: dict[tuple, int] = {}
    for plans in server_plans:
        for entry in plans:
            key = tuple((int(d), str(t)) for d, t in entry["operators"])
            merged[key] = merged.get(key, 0) + int(entry["numSegments"])
    rows: list[list] = []
    combine_name = {"selection": "COMBINE_SELECT" if not plan.order_by else "COMBINE_SELECT_ORDERBY",
                    "aggregation": "COMBINE_AGGREGATE", "group_by": "COMBINE_GROUP_BY"}[plan.kind]  # fmt: skip
    rows.append([f"BROKER_REDUCE(limit:{plan.limit})", 0, -1])
    rows.append([combine_name, 1, 0])
    next_id = 2
    for lines, count in merged.items():
        rows.append([f"PLAN_START(numSegmentsForThisPlan:{count})", -1, -1])
        stack: list[tuple[int, int]] = [(-1, 1)]  # (depth, operator id); depth -1 = combine
        for depth, text in lines:
            while stack[-1][0] >= depth:
                stack.pop()
            rows.append([text, next_id, stack[-1][1]])
            stack.append((depth, next_id))
            next_id += 1
    return broker_response(["Operator", "Operator_Id", "Parent_Id"], ["STRING", "INT", "INT"], rows)


def explain(plan: QueryPlan, segments: list) -> dict:
    """In-process EXPLAIN PLAN FOR over local segments."""
    return explain_response(plan, [segment_plans(plan, segments)])


def _segment_plan(plan: QueryPlan, view: SegmentView) -> list[tuple[int, str]]:
    if prune_reason(view, plan.filter):
        return [(0, "FILTER_EMPTY")]
    lines: list[tuple[int, str]] = []
    if plan.kind == "aggregation":
        from engine.query.startree import star_tree_for

        aggs = ", ".join(fn.column_name for fn in plan.aggregations)
        if plan.use_star_tree and star_tree_for(plan, view) is not None:
            return [(0, f"AGGREGATE(aggregations:{aggs})"), (1, "STAR_TREE_INDEX")]
        lines.append((0, f"AGGREGATE(aggregations:{aggs})"))
    elif plan.kind == "group_by":
        from engine.query.startree import star_tree_for

        aggs = ", ".join(fn.column_name for fn in plan.aggregations)
        keys = ", ".join(str(g) for g in plan.group_by)
        lines.append((0, f"GROUP_BY(groupKeys:{keys}, aggregations:{aggs})"))
        if plan.use_star_tree and star_tree_for(plan, view) is not None:
            return [*lines, (1, "STAR_TREE_INDEX")]
    else:
        select = ", ".join(str(e) for e in plan.select)
        order = ", ".join(f"{o.expr} {'DESC' if o.desc else 'ASC'}" for o in plan.order_by)
        lines.append(
            (
                0,
                f"SELECT_ORDERBY(selectList:{select}, orderBy:{order})"
                if order
                else f"SELECT(selectList:{select})",
            )
        )
    projected = sorted(plan.referenced_columns)
    lines.append((1, f"PROJECT({', '.join(projected)})"))
    lines.append((2, "DOC_ID_SET"))
    lines.extend(_filter_lines(plan.filter, FilterEvaluator(view), 3))
    return lines


def _filter_lines(expr, evaluator: FilterEvaluator, depth: int) -> list[tuple[int, str]]:
    if expr is None:
        return [(depth, f"FILTER_MATCH_ENTIRE_SEGMENT(docs:{evaluator.n})")]
    if isinstance(expr, Literal):
        return [(depth, "FILTER_MATCH_ENTIRE_SEGMENT" if expr.value else "FILTER_EMPTY")]
    if isinstance(expr, Function) and expr.name in {"and", "or", "not"}:
        out = [(depth, f"FILTER_{expr.name.upper()}")]
        for child in expr.args:
            out.extend(_filter_lines(child, evaluator, depth + 1))
        return out
    leaf = to_leaf(expr)
    path = evaluator.access_path(leaf)
    lookup = _INDEX_LOOKUP.get(path)
    detail = f"operator:{leaf.label},predicate:{to_sql(expr)}"
    if lookup:
        detail = f"indexLookUp:{lookup},{detail}"
    return [(depth, f"{path}({detail})")]
