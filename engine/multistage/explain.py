"""``EXPLAIN PLAN FOR``: the plan as Pinot prints it, one node per line, two spaces a level.

Column references print as ``$i``, the position in the node's input (Calcite's style), so
``LogicalJoin(condition=[=($0, $2)], joinType=[inner])`` reads as in Pinot. With stages
(``EXPLAIN IMPLEMENTATION PLAN FOR``) each exchange names its stage and its workers.
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage.logical import (
    Aggregate,
    Exchange,
    Filter,
    Join,
    LeafScan,
    Node,
    Project,
    Scan,
    SetOp,
    Sort,
    Unnest,
    Values,
    Window,
)


def explain_lines(node: Node, depth: int = 0, stage_of=None, placed=None) -> list[str]:
    line = "  " * depth + describe(node, stage_of, placed)
    out = [line]
    for child in node.inputs:
        out += explain_lines(child, depth + 1, stage_of, placed)
    return out


def explain_text(node: Node, stage_of=None, placed=None) -> str:
    """``placed(exchange)``: (distribution, why it is not colocated) as placed for this run."""
    lines = explain_lines(node, 0, stage_of, placed)
    return "\n".join(["Execution Plan", *lines]) + "\n"


def describe(node: Node, stage_of=None, placed=None) -> str:
    positions = _positions(node)

    def e(x: exp.Expression) -> str:
        return _calcite(x, positions)

    if isinstance(node, LeafScan | Scan):
        text = f"PinotLogicalTableScan(table=[[default, {node.table.name}]])"
        if isinstance(node, LeafScan) and node.filter:
            text += f" [leaf filter: {node.filter}]"
        return text
    if isinstance(node, Filter):
        return f"LogicalFilter(condition=[{e(node.condition)}])"
    if isinstance(node, Project):
        items = ", ".join(
            f"{f.name}=[{e(x)}]" for f, x in zip(node.fields, node.exprs, strict=True)
        )
        return f"LogicalProject({items})"
    if isinstance(node, Aggregate):
        group = "{" + ", ".join(e(k) for k in node.keys) + "}"
        aggs = ", ".join(f"agg#{i}=[{e(a)}]" for i, a in enumerate(node.aggs))
        return f"PinotLogicalAggregate(group=[{group}]{', ' if aggs else ''}{aggs}, " \
               f"aggType=[{node.phase.upper()}])"  # fmt: skip
    if isinstance(node, Join):
        cond = e(node.condition) if node.condition is not None else "true"
        kind = {"left_asof": "left_asof"}.get(node.kind, node.kind)
        extra = f", matchCondition=[{e(node.match_condition)}]" if node.match_condition else ""
        return f"LogicalJoin(condition=[{cond}]{extra}, joinType=[{kind}])"
    if isinstance(node, Window):
        wins = ", ".join(e(w) for w in node.windows)
        return f"LogicalWindow(window#0=[{wins}])"
    if isinstance(node, Sort):
        keys = ", ".join(f"sort{i}=[{e(k.expr)}], dir{i}=[{'DESC' if k.desc else 'ASC'}]"
                         for i, k in enumerate(node.keys))  # fmt: skip
        parts = [keys] if keys else []
        if node.offset:
            parts.append(f"offset=[{node.offset}]")
        if node.limit is not None:
            parts.append(f"fetch=[{node.limit}]")
        return f"LogicalSort({', '.join(parts)})"
    if isinstance(node, SetOp):
        name = {"union": "LogicalUnion", "intersect": "LogicalIntersect",
                "except": "LogicalMinus"}[node.kind]  # fmt: skip
        return f"{name}(all=[{'true' if node.all else 'false'}])"
    if isinstance(node, Values):
        return f"LogicalValues(tuples=[{[[v.sql() for v in r] for r in node.rows]}])"
    if isinstance(node, Unnest):
        return f"Uncollect({', '.join(e(a) for a in node.arrays)})"
    if isinstance(node, Exchange):
        return _exchange(node, positions, stage_of, placed)
    return type(node).__name__


def _exchange(node: Exchange, positions: dict[str, int], stage_of, placed) -> str:
    """A colocated join's side says ``colocated=[true]`` (it moves 1:1, no shuffle), or why
    placement fell back to the hash shuffle this time."""
    dist, fallback = node.distribution, None
    if placed is not None and placed(node) is not None:
        dist, fallback = placed(node)
    extra = ""
    if node.distribution == "partitioned":
        extra = ", colocated=[true]" if dist == "partitioned" else \
            f", colocated=[false: {fallback}]"  # fmt: skip
        dist = "hash"
    if dist == "hash":
        dist = f"hash[{', '.join(str(positions.get(k, k)) for k in node.keys)}]"
    stage = f", stage=[{stage_of(node)}]" if stage_of is not None else ""
    return f"PinotLogicalExchange(distribution=[{dist}]{extra}{stage})"


def _positions(node: Node) -> dict[str, int]:
    """Field id -> position in the node's input row (both sides of a join in a row)."""
    fields = [f for child in node.inputs for f in child.fields]
    return {f.id: i for i, f in enumerate(fields)}


def _calcite(x: exp.Expression, positions: dict[str, int]) -> str:
    def visit(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.name in positions:
            return exp.Var(this=f"${positions[n.name]}")
        return n

    return x.copy().transform(visit, copy=False).sql()
