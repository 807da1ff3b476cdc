"""Logical rewrites before stages are cut:

* filter pushdown: each WHERE conjunct moves down to the lowest node that has its columns; a
  conjunct over both sides of an inner or cross join becomes part of the join's condition
  (``FROM a, b WHERE a.k = b.k`` is a hash join, not a cross product);
* a filter reaching a table scan goes to the leaf: the conjuncts the single-stage engine
  evaluates alike (comparisons, IN, BETWEEN, LIKE of a column with literals) become its
  Pinot filter, with indexes and pruning; the rest stays above;
* column pruning: a scan reads only the columns something above reads.
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage.clauses import and_all, conjuncts
from engine.multistage.logical import (
    Aggregate,
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
from engine.multistage.scope import column_ids


def optimize(node: Node) -> Node:
    node, _ = fold_not_null(node)
    node = push_filters(node, [])
    node = prune_columns(node, {f.id for f in node.fields})
    return to_leaves(node)


# --- nullability --------------------------------------------------------------------------------
def fold_not_null(node: Node) -> tuple[Node, set[str]]:
    """``x IS [NOT] NULL`` of a column Pinot's planner holds not nullable is a constant, as
    in Pinot; (node, ids of its not-nullable fields)."""
    if isinstance(node, Scan):
        ids = {f.id for f, c in zip(node.fields, node.columns, strict=True)
               if c in node.table.not_null}  # fmt: skip
        return node, ids
    results = [fold_not_null(c) for c in node.inputs]
    inputs = [n for n, _ in results]
    sets = [s for _, s in results]
    if inputs:
        node = node.replace_inputs(inputs)
    if isinstance(node, Filter):
        return Filter(node.fields, node.input, _fold(node.condition, sets[0])), sets[0]
    if isinstance(node, Project):
        exprs = [_fold(e, sets[0]) for e in node.exprs]
        ids = {f.id for f, e in zip(node.fields, exprs, strict=True)
               if isinstance(e, exp.Column) and e.name in sets[0]}  # fmt: skip
        return Project(node.fields, node.input, exprs), ids
    if isinstance(node, Sort):
        return node, sets[0]
    if isinstance(node, Join):
        keep = {"inner": sets[0] | sets[1], "cross": sets[0] | sets[1], "left": sets[0],
                "semi": sets[0], "anti": sets[0], "right": sets[1]}.get(node.kind, set())  # fmt: skip
        return node, keep
    return node, set()


def _fold(e: exp.Expression, ids: set[str]) -> exp.Expression:
    if not ids:
        return e

    def visit(n: exp.Expression) -> exp.Expression:
        if (
            isinstance(n, exp.Is)
            and isinstance(n.expression, exp.Null)
            and isinstance(n.this, exp.Column)
            and n.this.name in ids
        ):
            return exp.false()
        return n

    return e.copy().transform(visit, copy=False)


# --- filter pushdown --------------------------------------------------------------------------
def push_filters(node: Node, pending: list[exp.Expression]) -> Node:
    """``node`` with ``pending`` conjuncts (over its fields) applied as low as they can go."""
    if isinstance(node, Filter):
        return push_filters(node.input, pending + conjuncts(node.condition))
    if isinstance(node, Join):
        return _push_join(node, pending)
    if isinstance(node, Project):
        mapping = {f.id: e for f, e in zip(node.fields, node.exprs, strict=True)}
        down, stay = [], []
        for c in pending:
            ids = column_ids(c)
            if ids <= mapping.keys() and all(_deterministic(mapping[i]) for i in ids):
                down.append(_substitute(c, mapping))
            else:
                stay.append(c)
        node = Project(node.fields, push_filters(node.input, down), node.exprs)
        return _filter(node, stay)
    if isinstance(node, SetOp):
        left = push_filters(node.left, [])
        right = push_filters(node.right, [])
        return _filter(SetOp(node.fields, node.kind, node.all, left, right, node.hints), pending)
    if isinstance(node, Aggregate) and node.grouping_sets is None:
        keys = {f.id: k for f, k in zip(node.fields, node.keys, strict=False)}
        down = [c for c in pending if column_ids(c) <= keys.keys()]
        stay = [c for c in pending if c not in down]
        inner = push_filters(node.input, [_substitute(c, keys) for c in down])
        return _filter(_with_input(node, inner), stay)
    inputs = [push_filters(child, []) for child in node.inputs]
    if inputs:
        node = node.replace_inputs(inputs)
    return _filter(node, pending)


def _push_join(join: Join, pending: list[exp.Expression]) -> Node:
    left_ids = {f.id for f in join.left.fields}
    right_ids = {f.id for f in join.right.fields}
    to_left, to_right, to_join, stay = [], [], [], []
    kind = join.kind
    for c in pending:
        ids = column_ids(c)
        if ids <= left_ids and kind in ("inner", "cross", "left", "semi", "anti", "asof",
                                        "left_asof"):  # fmt: skip
            to_left.append(c)
        elif ids <= right_ids and kind in ("inner", "cross", "right"):
            to_right.append(c)
        elif kind in ("inner", "cross") and ids <= left_ids | right_ids:
            to_join.append(c)
        else:
            stay.append(c)
    # the join's own condition: a side-only conjunct of an inner join filters that side
    own = conjuncts(join.condition)
    kept_own = []
    for c in own:
        ids = column_ids(c)
        if kind in ("inner", "semi") and ids and ids <= right_ids:
            to_right.append(c)
        elif kind == "inner" and ids and ids <= left_ids:
            to_left.append(c)
        elif kind in ("left", "left_asof", "anti") and ids and ids <= right_ids and \
                _deterministic(c) and not join.null_aware:  # fmt: skip
            to_right.append(c)
        else:
            kept_own.append(c)
    condition = and_all(kept_own + to_join)
    new_kind = "inner" if kind == "cross" and condition is not None else kind
    left = push_filters(join.left, to_left)
    right = push_filters(join.right, to_right)
    out = Join(join.fields, left, right, new_kind, condition, join.match_condition,
               join.null_aware, join.hints)  # fmt: skip
    return _filter(out, stay)


def _filter(node: Node, pending: list[exp.Expression]) -> Node:
    condition = and_all(pending)
    return node if condition is None else Filter(node.fields, node, condition)


def _with_input(node: Node, inner: Node) -> Node:
    return node.replace_inputs([inner])


def _substitute(e: exp.Expression, mapping: dict[str, exp.Expression]) -> exp.Expression:
    def visit(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.name in mapping:
            return mapping[n.name].copy()
        return n

    return e.copy().transform(visit, copy=False)


def _deterministic(e: exp.Expression) -> bool:
    for n in e.walk():
        if isinstance(n, exp.Window):
            return False
        if isinstance(n, exp.Anonymous) and str(n.this).lower() in ("rand", "random", "now"):
            return False
    return True


# --- column pruning --------------------------------------------------------------------------
def prune_columns(node: Node, needed: set[str]) -> Node:
    if isinstance(node, Scan):
        keep = [i for i, f in enumerate(node.fields) if f.id in needed] or [0]
        return Scan([node.fields[i] for i in keep], node.table,
                    [node.columns[i] for i in keep], node.hints)  # fmt: skip
    if isinstance(node, Project):
        keep = [i for i, f in enumerate(node.fields) if f.id in needed] or [0]
        fields = [node.fields[i] for i in keep]
        exprs = [node.exprs[i] for i in keep]
        inner = prune_columns(node.input, _ids_of(exprs))
        return Project(fields, inner, exprs)
    if isinstance(node, Filter):
        inner = prune_columns(node.input, needed | column_ids(node.condition))
        return Filter(inner.fields, inner, node.condition)
    if isinstance(node, Aggregate):
        inner = prune_columns(node.input, _ids_of(node.keys + node.aggs))
        return _with_input(node, inner)
    if isinstance(node, Window):
        wanted = (needed & {f.id for f in node.input.fields}) | _ids_of(node.windows)
        inner = prune_columns(node.input, wanted)
        new = list(inner.fields) + node.fields[len(node.input.fields) :]
        return Window(new, inner, node.windows, node.hints)
    if isinstance(node, Sort):
        inner = prune_columns(node.input, needed | _ids_of([k.expr for k in node.keys]))
        return Sort(inner.fields, inner, node.keys, node.limit, node.offset)
    if isinstance(node, Join):
        cond = _ids_of([c for c in (node.condition, node.match_condition) if c is not None])
        left = prune_columns(node.left, needed | cond)
        right = prune_columns(node.right, needed | cond)
        fields = left.fields if node.kind in ("semi", "anti") else [*left.fields, *right.fields]
        return Join(fields, left, right, node.kind, node.condition, node.match_condition,
                    node.null_aware, node.hints)  # fmt: skip
    if isinstance(node, Unnest):
        inner = prune_columns(node.input, needed | _ids_of(node.arrays))
        extra = node.fields[len(node.input.fields) :]
        return Unnest([*inner.fields, *extra], inner, node.arrays)
    if isinstance(node, SetOp | Values):
        inputs = [prune_columns(c, {f.id for f in c.fields}) for c in node.inputs]
        return node.replace_inputs(inputs) if inputs else node
    inputs = [prune_columns(c, {f.id for f in c.fields}) for c in node.inputs]
    return node.replace_inputs(inputs) if inputs else node


def _ids_of(exprs) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= column_ids(e)
    return out


# --- scans to leaves -------------------------------------------------------------------------
def to_leaves(node: Node) -> Node:
    if isinstance(node, Filter) and isinstance(node.input, Scan):
        scan = node.input
        names = {
            f.id: (c, scan.table.columns[c][0] if scan.table.columns[c][1] else "MULTI_VALUE")
            for f, c in zip(scan.fields, scan.columns, strict=True)
        }
        from engine.multistage.leaf_filter import pinot_filter

        pushed = [p for p in (pinot_filter(c, names) for c in conjuncts(node.condition)) if p]
        leaf = LeafScan(scan.fields, scan.table, scan.columns,
                        " AND ".join(f"({p})" for p in pushed) or None, scan.hints)  # fmt: skip
        # the filter stays above as well: the leaf's only narrows what it reads
        return Filter(leaf.fields, leaf, node.condition)
    if isinstance(node, Scan):
        return LeafScan(node.fields, node.table, node.columns, None, node.hints)
    inputs = [to_leaves(c) for c in node.inputs]
    return node.replace_inputs(inputs) if inputs else node
