"""Answer aggregations from a segment's star-tree instead of its rows.

A query fits a star-tree when every GROUP BY expression is a plain column among the tree's
``dimensionsSplitOrder``, every aggregation has its ``FUNCTION__column`` pair in the tree
(``COUNT(*)`` -> ``COUNT__*``), and the filter is an AND of predicates that each read one
split-order dimension (OR / NOT allowed inside one dimension). Each such predicate becomes
the set of dictionary ids it accepts, the tree traversal returns the pre-aggregated records
that answer the query exactly, and the records' states are merged per group with the same
kernels that merge segment results.
"""

from __future__ import annotations

import numpy as np

from engine.query.evaluate import reads_nulls
from engine.query.expressions import Expression, Function, Identifier, columns_of
from engine.query.filter import FilterEvaluator, to_leaf
from engine.query.grouping import combine_codes, decode_key
from engine.query.intermediate import IntermediateResult
from engine.query.plan import QueryPlan
from engine.query.segment_view import SegmentView

_STATE_COMPONENTS = {"count": ("count",), "sum": ("sum",), "min": ("min",), "max": ("max",),
                     "avg": ("sum", "count"), "minmaxrange": ("min", "max")}  # fmt: skip


def _pair(fn) -> str | None:
    if fn.name not in _STATE_COMPONENTS or fn.filter is not None:
        return None
    if fn.argument is None:
        return "COUNT__*" if fn.name == "count" else None
    if not isinstance(fn.argument, Identifier):
        return None
    return f"{fn.name.upper()}{'MV' if fn.multi_value else ''}__{fn.argument.name}"


def _conjuncts(expr: Expression | None) -> list[Expression]:
    if expr is None:
        return []
    if isinstance(expr, Function) and expr.name == "and":
        return [c for a in expr.args for c in _conjuncts(a)]
    return [expr]


def _single_column(expr: Expression) -> str | None:
    cols = columns_of(expr)
    return next(iter(cols)) if len(cols) == 1 else None


def star_tree_for(plan: QueryPlan, view: SegmentView):
    """(tree, allowed dict ids per dimension, pairs) when a star-tree can answer ``plan``,
    else None. It reads only the immutable segment and the plan: the executor keeps the
    answer per segment and plan shape (``QueryPlan.segment_memo_key``)."""
    if plan.kind == "selection" or not plan.use_star_tree:
        return None
    trees = getattr(view.segment, "star_trees", None)  # consuming segments have none
    if not trees:
        return None
    if plan.filter is not None and reads_nulls(plan.filter):
        return None  # IS NULL, COALESCE ...: a tree's records keep no null vector
    if reads_segment_nulls(plan, view):
        return None
    return _star_tree_for(plan, view, trees)


def reads_segment_nulls(plan: QueryPlan, view: SegmentView) -> bool:
    """With null handling, whether a column the plan filters, groups or aggregates on holds
    a NULL in this segment. A tree pre-aggregates stored values, defaults of NULLs
    included, so it answers only when there is none (as Pinot's StarTreeUtils decides); the
    group-by shortcuts over sorted runs and dictionary counts likewise."""
    if not view.null_handling:
        return False
    exprs = [*plan.group_by, *([plan.filter] if plan.filter is not None else [])]
    for fn in plan.aggregations:
        exprs += [e for e in (fn.argument, fn.null_input) if e is not None]
    columns = set().union(*(columns_of(e) for e in exprs)) if exprs else set()
    return any(view.has(c) and view.null_bitmap(c) is not None for c in columns)


def _star_tree_for(plan: QueryPlan, view: SegmentView, trees):
    if any(not isinstance(g, Identifier) for g in plan.group_by):
        return None
    group_cols = [g.name for g in plan.group_by]
    pairs = [_pair(fn) for fn in plan.aggregations]
    if None in pairs:
        return None
    by_column: dict[str, list[Expression]] = {}
    for conjunct in _conjuncts(plan.filter):
        column = _single_column(conjunct)
        if column is None or not view.is_dict_sv(column):
            return None
        by_column.setdefault(column, []).append(conjunct)
    for tree in trees:
        if tree.supports(by_column, group_cols, pairs):
            evaluator = FilterEvaluator(view)
            allowed = {
                col: _intersect_all([_allowed_ids(e, col, view, evaluator) for e in exprs])
                for col, exprs in by_column.items()
            }
            return tree, allowed, pairs
    return None


def _intersect_all(sets: list[np.ndarray]) -> np.ndarray:
    result = sets[0]
    for other in sets[1:]:
        result = np.intersect1d(result, other, assume_unique=True)
    return result


def _allowed_ids(
    expr: Expression, column: str, view: SegmentView, evaluator: FilterEvaluator
) -> np.ndarray:
    """Sorted dictionary ids of ``column`` that satisfy ``expr`` (which reads only it)."""
    card = len(view.dictionary(column))
    if isinstance(expr, Function) and expr.name in ("and", "or"):
        parts = [_allowed_ids(a, column, view, evaluator) for a in expr.args]
        if expr.name == "and":
            return _intersect_all(parts)
        return np.unique(np.concatenate(parts))
    if isinstance(expr, Function) and expr.name == "not":
        inner = _allowed_ids(expr.args[0], column, view, evaluator)
        return np.setdiff1d(np.arange(card), inner, assume_unique=True)
    leaf = to_leaf(expr)
    match = evaluator.match_ids(leaf)
    ids = (
        np.zeros(0, dtype=np.int64)
        if match is None
        else evaluator.match_list(match).astype(np.int64)
    )
    if leaf.exclusive:
        ids = np.setdiff1d(np.arange(card), ids, assume_unique=True)
    return ids


def execute_star_tree(
    plan: QueryPlan, view: SegmentView, result: IntermediateResult, found: tuple
) -> IntermediateResult:
    """Fill ``result`` from the star-tree ``star_tree_for`` found."""
    tree, allowed, pairs = found
    records = tree.matching_records(allowed, [g.name for g in plan.group_by])
    n_records = len(records)
    stats = result.stats
    stats["numDocsScanned"] = n_records
    stats["numEntriesScannedPostFilter"] = n_records * (len(plan.group_by) + len(pairs))
    if n_records:
        stats["numSegmentsMatched"] = 1
    if plan.kind == "group_by":
        cards = [len(view.dictionary(g.name)) for g in plan.group_by]
        codes = [tree.dimension(g.name)[records].astype(np.int64) for g in plan.group_by]
        groups, group_keys = combine_codes(codes, cards)
        per_column = decode_key(group_keys, cards)
        result.keys = [
            view.dictionary(g.name)[c] for g, c in zip(plan.group_by, per_column, strict=True)
        ]
        n_groups = len(group_keys)
    else:
        groups = np.zeros(n_records, dtype=np.int64)
        n_groups = 1
    result.states = []
    for fn, pair in zip(plan.aggregations, pairs, strict=True):
        state = tuple(
            np.asarray(tree.metric(pair, comp))[records] for comp in _STATE_COMPONENTS[fn.name]
        )
        result.states.append(fn.merge(fn.of_parts(state, n_records), groups, n_groups))
    return result
