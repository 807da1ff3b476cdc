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

from engine.query.evaluate import evaluate
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
        out.keys, out.states = parts[0].keys, parts[0].states
    else:
        columns = [np.concatenate([r.keys[i] for r in parts]) for i in range(len(plan.group_by))]
        inverse, n_groups, keys = group_values(columns)
        out.keys = keys
        out.states = [
            fn.merge(fn.concat_states([r.states[i] for r in parts]), inverse, n_groups)
            for i, fn in enumerate(plan.aggregations)
        ]
    trim_group_by(plan, out)
    return out


def trim_size(plan: QueryPlan) -> int:
    return max(5 * (plan.offset + plan.limit), MIN_TRIM_SIZE)


def trim_group_by(plan: QueryPlan, result: IntermediateResult) -> None:
    """Keep the top ``trim_size`` groups by the ORDER BY (in place)."""
    if not plan.order_by or plan.having is not None or result.num_groups <= trim_size(plan):
        return
    order = group_order(plan, result.keys, result.states)
    keep = np.sort(order[: trim_size(plan)])
    result.keys = [k[keep] for k in result.keys]
    result.states = [
        fn.take(s, keep) for fn, s in zip(plan.aggregations, result.states, strict=True)
    ]


def finalize_lookup(plan: QueryPlan, keys: list[np.ndarray], states: list[tuple]):
    """A lookup for ``evaluate`` resolving GROUP BY expressions and aggregation calls."""
    known = {g: k for g, k in zip(plan.group_by, keys, strict=True)}
    for fn, state in zip(plan.aggregations, states, strict=True):
        known[fn.call] = fn.finalize(state)
    return known.get


def group_order(plan: QueryPlan, keys, states, mask: np.ndarray | None = None) -> np.ndarray:
    """Indices of the groups in ORDER BY order (stable, so ties keep key order)."""
    n = len(keys[0]) if keys else 1
    lookup = finalize_lookup(plan, keys, states)
    columns = [evaluate(o.expr, lookup, n) for o in plan.order_by]
    if mask is not None:
        columns = [c[mask] for c in columns]
    return sort_indices(columns, [o.desc for o in plan.order_by])


def sort_indices(columns: list[np.ndarray], descending: list[bool]) -> np.ndarray:
    if not columns:
        return np.arange(0)
    table = pa.table({f"o{i}": pa.array(c) for i, c in enumerate(columns)})
    keys = [(f"o{i}", "descending" if d else "ascending") for i, d in enumerate(descending)]
    return pc.sort_indices(table, sort_keys=keys).to_numpy()


def select_top(plan: QueryPlan, rows: pa.Table) -> pa.Table:
    """Selection rows: sorted by the ORDER BY keys (columns ``o0..``) when there is one,
    then cut to offset + limit."""
    keep = plan.offset + plan.limit
    if plan.order_by:
        keys = [
            (f"o{i}", "descending" if o.desc else "ascending") for i, o in enumerate(plan.order_by)
        ]
        if rows.num_rows > keep:
            index = pc.select_k_unstable(rows, k=keep, sort_keys=keys)
            rows = rows.take(index)
        rows = rows.take(pc.sort_indices(rows, sort_keys=keys))
    return rows.slice(0, keep)
