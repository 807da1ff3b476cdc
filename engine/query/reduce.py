"""Broker side: merge the servers' intermediate results and finish the query (finalize
aggregations, HAVING, ORDER BY, OFFSET/LIMIT, SELECT expressions) into a BrokerResponse."""

from __future__ import annotations

import numpy as np

from engine.query.combine import Finalized, combine, order_indices
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
        key_nulls = None
        n = 1
    else:
        keys, states = merged.keys, merged.decoded_states(plan)
        key_nulls = merged.key_nulls
        n = len(keys[0]) if keys else 0
    final = Finalized(plan, keys, states, key_nulls)
    index = np.arange(n)
    if plan.having is not None:
        index = np.flatnonzero(final.holds(plan.having))
    if plan.order_by and n > 1:
        index = index[order_indices(plan, final, index)]
    if plan.kind == "aggregation":
        index = index[plan.offset :]  # one row; LIMIT does not cut it (Pinot)
    else:
        index = index[plan.offset : plan.offset + plan.limit]
    columns = []
    for expr, data_type in zip(plan.select, types, strict=True):
        values, nulls = final.values(expr)
        column = column_json(np.asarray(values)[index], data_type)
        if nulls is not None:
            column = [None if null else v for v, null in zip(column, nulls[index], strict=True)]
        columns.append(column)
    return columns
