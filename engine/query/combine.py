"""Merge intermediate results (per segment -> per server -> at the broker) into one.

Group-by results are merged by key value, so segments and servers with different
dictionaries combine correctly. With ORDER BY (and no HAVING) a merged group-by is trimmed
to ``max(5 * (offset + limit), 5000)`` groups as Pinot does; when the order is on group-by
keys only the trim is exact, on aggregations it is Pinot's same approximation.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.query.evaluate import evaluate, evaluate_nullable
from engine.query.grouping import group_values
from engine.query.intermediate import IntermediateResult, merge_stats
from engine.query.plan import QueryPlan
from engine.query.trace import merge_traces

MIN_TRIM_SIZE = 5000


def combine(plan: QueryPlan, results: list[IntermediateResult]) -> IntermediateResult:
    """One IntermediateResult equivalent to all of ``results``."""
    stats = merge_stats([r.stats for r in results])
    exceptions: list[dict] = []
    limit_reached = False
    for r in results:
        exceptions.extend(r.exceptions)
        limit_reached |= r.num_groups_limit_reached
    out = IntermediateResult(plan.kind, stats, limit_reached, exceptions)
    if plan.trace:
        out.trace = merge_traces([r.trace for r in results])
    if plan.kind == "selection":
        tables = [r.rows for r in results if r.rows is not None and r.rows.num_rows]
        if tables:
            out.rows = select_top(plan, pa.concat_tables(tables, promote_options="permissive"))
        else:
            out.rows = next((r.rows for r in results if r.rows is not None), None)
        return out
    with_states = [r for r in results if r.decoded_states(plan) is not None]
    if plan.kind == "aggregation":
        if not with_states:  # every segment pruned: the identity of the merge
            out.states = [fn.empty_state(1) for fn in plan.aggregations]
        elif len(with_states) == 1:
            out.states = with_states[0].states
        else:
            out.states = [
                fn.merge_one([r.states[i] for r in with_states])
                for i, fn in enumerate(plan.aggregations)
            ]
        return out
    parts = [r for r in with_states if r.num_groups > 0]
    if not parts:
        out.keys = [np.empty(0) for _ in plan.group_by]
        out.states = [fn.empty_state(0) for fn in plan.aggregations]
        return out
    if len(parts) == 1:
        out.keys, out.key_nulls, out.states = parts[0].keys, parts[0].key_nulls, parts[0].states
    else:
        columns = [np.concatenate([r.keys[i] for r in parts]) for i in range(len(plan.group_by))]
        inverse, n_groups, keys, key_nulls = group_values(columns, _concat_nulls(parts))
        out.keys = keys
        out.key_nulls = key_nulls if any(n is not None for n in key_nulls) else None
        out.states = [
            fn.merge(fn.concat_states([r.states[i] for r in parts]), inverse, n_groups)
            for i, fn in enumerate(plan.aggregations)
        ]
    trim_group_by(plan, out)
    return out


def _concat_nulls(parts: list[IntermediateResult]) -> list[np.ndarray | None] | None:
    """Each key's NULL marks over the parts' groups one after another (None: no NULL)."""
    if all(r.key_nulls is None for r in parts):
        return None
    out = []
    for i in range(len(parts[0].keys)):
        marks = [None if r.key_nulls is None else r.key_nulls[i] for r in parts]
        if all(m is None for m in marks):
            out.append(None)
            continue
        out.append(np.concatenate([
            np.zeros(len(r.keys[i]), dtype=bool) if m is None else m
            for r, m in zip(parts, marks, strict=True)
        ]))  # fmt: skip
    return out


def trim_size(plan: QueryPlan) -> int:
    return max(5 * (plan.offset + plan.limit), MIN_TRIM_SIZE)


def trim_group_by(plan: QueryPlan, result: IntermediateResult) -> None:
    """Keep the top ``trim_size`` groups by the ORDER BY (in place)."""
    if not plan.order_by or plan.having is not None or result.num_groups <= trim_size(plan):
        return
    order = group_order(plan, result)
    keep = np.sort(order[: trim_size(plan)])
    result.keys = [k[keep] for k in result.keys]
    if result.key_nulls is not None:
        result.key_nulls = [None if m is None else m[keep] for m in result.key_nulls]
    result.states = [
        fn.take(s, keep) for fn, s in zip(plan.aggregations, result.states, strict=True)
    ]


class Finalized:
    """The values (and NULL marks, with null handling) of expressions over finished groups:
    GROUP BY expressions read the keys, aggregation calls the finalized states."""

    def __init__(self, plan: QueryPlan, keys: list[np.ndarray], states: list[tuple],
                 key_nulls: list[np.ndarray | None] | None = None):  # fmt: skip
        self.plan = plan
        self.n = len(keys[0]) if keys else 1
        known = {g: k for g, k in zip(plan.group_by, keys, strict=True)}
        for fn, state in zip(plan.aggregations, states, strict=True):
            known[fn.call] = fn.finalize(state)
        self.lookup = known.get
        # NULL marks are read only with null handling (``values``): not worked out otherwise
        self.null_lookup = self._nulls(plan, states, key_nulls).get if plan.null_handling else None

    @staticmethod
    def _nulls(plan: QueryPlan, states: list[tuple], key_nulls) -> dict:
        nulls: dict = {}
        for g, marks in zip(plan.group_by, key_nulls or [], strict=False):
            if marks is not None:
                nulls[g] = marks
        for fn, state in zip(plan.aggregations, states, strict=True):
            marks = fn.finalize_nulls(state)
            if marks is not None and marks.any():
                nulls[fn.call] = marks
        return nulls

    def values(self, expr) -> tuple[np.ndarray, np.ndarray | None]:
        """(values, NULL marks or None) of ``expr`` for each group."""
        if not self.plan.null_handling:
            return evaluate(expr, self.lookup, self.n), None
        return evaluate_nullable(expr, self.lookup, self.null_lookup, self.n, sql_nulls=True)

    def holds(self, expr) -> np.ndarray:
        """Where the condition ``expr`` is true (not false, not NULL)."""
        values, nulls = self.values(expr)
        true = np.asarray(values, dtype=bool)
        return true if nulls is None else true & ~nulls


def group_order(plan: QueryPlan, result: IntermediateResult) -> np.ndarray:
    """Indices of the groups in ORDER BY order (stable, so ties keep key order)."""
    return order_indices(plan, Finalized(plan, result.keys, result.states, result.key_nulls))


def order_indices(plan: QueryPlan, final: Finalized, rows: np.ndarray | None = None):
    """The positions in ``rows`` (all groups when None) in ORDER BY order."""
    columns, nulls = [], []
    for o in plan.order_by:
        values, marks = final.values(o.expr)
        if rows is not None:
            values, marks = values[rows], None if marks is None else marks[rows]
        columns.append(values)
        nulls.append(marks)
    return sort_indices(columns, plan, nulls)


def sort_indices(
    columns: list[np.ndarray], plan: QueryPlan, nulls: list[np.ndarray | None] | None = None
) -> np.ndarray:
    """Stable sort of the rows by ``columns``, one per ORDER BY item of ``plan``; ``nulls``
    marks NULL rows of each (null handling), placed by the item's NULLS FIRST/LAST."""
    if not columns:
        return np.arange(0)
    masks = nulls or [None] * len(columns)
    arrays = {
        f"o{i}": pa.array(c, mask=m) for i, (c, m) in enumerate(zip(columns, masks, strict=True))
    }
    if plan.null_handling:
        for i, marks in enumerate(masks):
            rows = len(columns[i])
            arrays[f"n{i}"] = pa.array(np.zeros(rows, dtype=bool) if marks is None else marks)
    return pc.sort_indices(pa.table(arrays), sort_keys=order_keys(plan)).to_numpy()


def order_keys(plan: QueryPlan) -> list[tuple[str, str]]:
    """Arrow sort keys of the ORDER BY over columns ``o0..`` (the values) and, with null
    handling, ``n0..`` (True where NULL) first: Pinot's NULLS LAST for ASC and NULLS FIRST
    for DESC, or as the query says."""
    keys = []
    for i, o in enumerate(plan.order_by):
        if plan.null_handling:
            keys.append((f"n{i}", "ascending" if o.nulls_last else "descending"))
        keys.append((f"o{i}", "descending" if o.desc else "ascending"))
    return keys


def select_top(plan: QueryPlan, rows: pa.Table) -> pa.Table:
    """Selection rows: sorted by the ORDER BY keys (columns ``o0..``) when there is one,
    then cut to offset + limit."""
    keep = plan.offset + plan.limit
    if plan.order_by:
        keys = order_keys(plan)
        if rows.num_rows > keep:
            index = pc.select_k_unstable(rows, k=keep, sort_keys=keys)
            rows = rows.take(index)
        rows = rows.take(pc.sort_indices(rows, sort_keys=keys))
    return rows.slice(0, keep)
