"""Query execution: Pinot SQL -> plan -> per-segment execution -> combine -> reduce.

Public API::

    from engine.query import compile_query, run_query, execute_segment, combine, reduce

    plan = compile_query(sql, schema)          # QueryPlan; .raw_table routes (no _OFFLINE)
    part = execute_segment(plan, segment)      # IntermediateResult for one ImmutableSegment
    server = combine(plan, [part, ...])        # per-server merge (stats summed)
    blob = server.to_bytes(plan)               # Arrow IPC; IntermediateResult.from_bytes(blob)
    response = reduce(plan, [server, ...])     # BrokerResponse dict (Pinot JSON)
    response = run_query(sql, segments, table_schema=None, query_options=None)

Errors are ``engine.query.errors.QueryError`` subclasses carrying Pinot's error codes.
"""

from engine.query.combine import combine
from engine.query.errors import QueryError
from engine.query.executor import execute_segment
from engine.query.intermediate import IntermediateResult
from engine.query.plan import QueryPlan
from engine.query.reduce import reduce
from engine.query.runner import compile_query, execute_server, run_query

__all__ = [
    "IntermediateResult",
    "QueryError",
    "QueryPlan",
    "combine",
    "compile_query",
    "execute_segment",
    "execute_server",
    "reduce",
    "run_query",
]
