"""The hybrid table's time boundary as a filter: the OFFLINE half of a query answers
``column <= value`` and the REALTIME half ``column > value``, so every row counts once. The
broker computes the boundary (``engine.broker.time_boundary``) and sends it with each server
request as ``{"column", "op", "value"}``; both sides apply it with ``with_time_boundary``."""

from __future__ import annotations

import dataclasses

from engine.query.expressions import Function, Identifier, Literal
from engine.query.plan import QueryPlan

BOUNDARY_OPS = {"<=": "less_than_or_equal", ">": "greater_than"}


def with_time_boundary(plan: QueryPlan, boundary: dict | None) -> QueryPlan:
    """``plan`` with ``column <= value`` (OFFLINE) or ``column > value`` (REALTIME) ANDed to
    its filter; ``plan`` itself when ``boundary`` is None. ``boundary["op"]`` must be one of
    ``BOUNDARY_OPS``."""
    if boundary is None:
        return plan
    clause = Function(
        BOUNDARY_OPS[boundary["op"]],
        (Identifier(boundary["column"]), Literal(boundary["value"])),
    )
    where = clause if plan.filter is None else Function("and", (plan.filter, clause))
    return dataclasses.replace(plan, filter=where)
