"""Small pieces of a SELECT's plan that the planner, the SELECT-block planner, the subquery
planner and the optimizer share: splitting and joining conjunctions, LIMIT/OFFSET, ORDER BY
keys and a filter over a node. Below all of them, so none imports another to reach these."""

from __future__ import annotations

from sqlglot import exp

from engine.multistage.logical import Filter, Node, SortKey
from engine.query.errors import QueryValidationError


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def and_all(parts: list[exp.Expression]) -> exp.Expression | None:
    out = None
    for part in parts:
        # sqlglot writes the tree as it is: an OR under AND needs its parentheses back,
        # or (a OR b) AND c would be rendered, and run, as a OR (b AND c)
        part = exp.Paren(this=part) if isinstance(part, exp.Or) else part
        out = part if out is None else exp.And(this=out, expression=part)
    return out


def limit_offset(tree: exp.Expression) -> tuple[int | None, int]:
    limit_node = tree.args.get("limit")
    offset_node = tree.args.get("offset")
    limit = offset = None
    if limit_node is not None:
        limit = _int(limit_node.expression, "LIMIT")
        if limit_node.args.get("offset") is not None:
            offset = _int(limit_node.args["offset"], "OFFSET")
    if offset_node is not None:
        offset = _int(offset_node.expression, "OFFSET")
    return limit, offset or 0


def _int(node: exp.Expression, what: str) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    raise QueryValidationError(f"{what} must be a non-negative integer, got {node.sql()}")


def sort_key(item: exp.Ordered, expr: exp.Expression) -> SortKey:
    desc = bool(item.args.get("desc"))
    nulls_first = item.args.get("nulls_first")
    if nulls_first is None:
        nulls_first = desc
    return SortKey(expr, desc, bool(nulls_first))


def filter_node(node: Node, condition: exp.Expression | None) -> Node:
    return node if condition is None else Filter(node.fields, node, condition)
