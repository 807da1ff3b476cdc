"""Broker side: merge the servers' intermediate results and finish the query (finalize
aggregations, HAVING, ORDER BY, OFFSET/LIMIT, SELECT expressions) into a BrokerResponse."""

from __future__ import annotations

import numpy as np

from engine.query.combine import combine, finalize_lookup, sort_indices
from engine.query.evaluate import evaluate
from engine.query.intermediate import IntermediateResult
from engine.query.plan import QueryPlan
from engine.query.response import broker_response, column_json


def reduce(
    plan: QueryPlan,
    results: list[IntermediateResult],
    *,
    time_used_ms: int = 0,
    num_servers_queried: int = 1,
    num_servers_responded: int | None = None,
) -> dict:
    """The BrokerResponse dict for ``results`` (one per server, or per segment)."""
    merged = combine(plan, results)
    columns = _final_columns(plan, merged)
    rows = [list(r) for r in zip(*columns, strict=True)] if columns else []
    return broker_response(
        plan.column_names, plan.column_types, rows, stats=merged.stats,
        exceptions=merged.exceptions, num_groups_limit_reached=merged.num_groups_limit_reached,
        time_used_ms=time_used_ms, num_servers_queried=num_servers_queried,
        num_servers_responded=num_servers_queried if num_servers_responded is None else num_servers_responded,
    )  # fmt: skip


def _final_columns(plan: QueryPlan, merged: IntermediateResult) -> list[list]:
    types = plan.column_types
    if plan.kind == "selection":
        rows = merged.rows
        if rows is None or rows.num_rows <= plan.offset:
            return []
        rows = rows.slice(plan.offset, plan.limit)
        return [column_json(rows.column(f"c{i}"), t) for i, t in enumerate(types)]
    if plan.kind == "aggregation":
        states = merged.decoded_states(plan)
        if states is None:
            states = [fn.empty_state(1) for fn in plan.aggregations]
        keys: list[np.ndarray] = []
        n = 1
    else:
        keys, states = merged.keys, merged.decoded_states(plan)
        n = len(keys[0]) if keys else 0
    lookup = finalize_lookup(plan, keys, states)
    mask = None
    if plan.having is not None:
        mask = np.asarray(evaluate(plan.having, lookup, n), dtype=bool)
    if plan.order_by and n > 1:
        order_cols = [evaluate(o.expr, lookup, n) for o in plan.order_by]
        base = np.flatnonzero(mask) if mask is not None else np.arange(n)
        index = base[sort_indices([c[base] for c in order_cols], [o.desc for o in plan.order_by])]
    else:
        index = np.flatnonzero(mask) if mask is not None else np.arange(n)
    if plan.kind == "aggregation":
        index = index[plan.offset :]  # one row; LIMIT does not cut it (Pinot)
    else:
        index = index[plan.offset : plan.offset + plan.limit]
    return [
        column_json(np.asarray(evaluate(e, lookup, n))[index], t)
        for e, t in zip(plan.select, types, strict=True)
    ]
