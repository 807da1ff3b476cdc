"""In-process query entry points.

``compile_query(sql, schema)`` parses and plans (LRU-cached on the SQL text and schema, since
sqlglot parsing costs far more than running a small query); ``run_query`` executes on local
segments, combines like a server and reduces like a broker, returning Pinot's BrokerResponse
JSON as a dict. Neither raises for a bad query: errors come back in ``exceptions``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from engine.query.combine import combine
from engine.query.errors import (
    QueryError,
    QueryExecutionError,
    QueryTimeoutError,
    TableNotFoundError,
)
from engine.query.executor import execute_segment
from engine.query.intermediate import IntermediateResult
from engine.query.parser import parse_sql
from engine.query.plan import (
    ColumnInfo,
    QueryPlan,
    build_plan,
    columns_from_schema,
    split_table_name,
)
from engine.query.reduce import reduce
from engine.query.response import error_response

PLAN_CACHE_SIZE = 1024
_PLANS: OrderedDict[tuple, QueryPlan] = OrderedDict()
_PARSED: OrderedDict[str, object] = OrderedDict()
QUERY_THREADS = int(os.environ.get("SPRIG_QUERY_THREADS", "2"))
# Segments run in parallel only for queries whose segments cost at least this much each: below
# it the pool's hand-offs and GIL contention cost more than the parallelism saves (measured
# here: two 0.14 ms segments take 0.29 ms one after the other and 0.56 ms in the pool).
PARALLEL_MIN_SEGMENT_MS = float(os.environ.get("SPRIG_PARALLEL_MIN_SEGMENT_MS", "2"))
_POOL: ThreadPoolExecutor | None = None
_SEGMENT_COST_MS: OrderedDict[str, float] = OrderedDict()  # SQL -> recent ms per segment


_CACHE_LOCK = threading.Lock()  # servers and brokers compile from many request threads


def _lru_get(cache: OrderedDict, key):
    with _CACHE_LOCK:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def _lru_put(cache: OrderedDict, key, value) -> None:
    with _CACHE_LOCK:
        cache[key] = value
        if len(cache) > PLAN_CACHE_SIZE:
            cache.popitem(last=False)


def compile_query(sql: str, schema=None, *, options: dict | None = None) -> QueryPlan:
    """The plan of ``sql`` (cached). ``schema``: an ``engine.spi.schema.Schema`` or a dict of
    ``ColumnInfo``; with it unknown columns are rejected (710). ``options`` override the
    query's own ``SET`` options. Raises QueryError subclasses."""
    columns = columns_from_schema(schema)
    key = (sql, tuple(sorted(columns.items())), tuple(sorted((options or {}).items())))
    plan = _lru_get(_PLANS, key)
    if plan is None:
        parsed = _lru_get(_PARSED, sql)
        if parsed is None:
            parsed = parse_sql(sql)
            _lru_put(_PARSED, sql, parsed)
        plan = build_plan(parsed, sql, columns)
        if options:
            plan = dataclasses.replace(
                plan, options={**plan.options, **{k: str(v) for k, v in options.items()}}
            )
        _lru_put(_PLANS, key, plan)
    return plan


def columns_from_segments(segments: list) -> dict[str, ColumnInfo]:
    columns: dict[str, ColumnInfo] = {}
    for segment in segments:
        for name in segment.column_names:
            if name not in columns:
                meta = segment.column(name).metadata
                columns[name] = ColumnInfo(str(meta.data_type), bool(meta.single_value))
    return columns


def _table_names(segments: list) -> set[str]:
    return {split_table_name(getattr(s, "table_name", "") or "")[0] for s in segments}


def execute_server(
    plan: QueryPlan, segments: list, *, deadline: float | None = None
) -> IntermediateResult:
    """Server side: run ``plan`` on each segment and combine (one IntermediateResult)."""
    global _POOL
    started = time.monotonic()
    deadline = deadline or (started + plan.timeout_ms / 1000.0)
    parallel = _parallel_pays(plan, len(segments))
    if parallel:
        with _CACHE_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(QUERY_THREADS, thread_name_prefix="sprig-query")
        futures = [_POOL.submit(_timed_segment, plan, s) for s in segments]
        results = []
        for future in futures:
            remaining = deadline - time.monotonic()
            try:
                results.append(future.result(timeout=max(remaining, 0.001)))
            except TimeoutError as err:
                for f in futures:
                    f.cancel()
                raise QueryTimeoutError(
                    f"Query timed out: not finished within timeoutMs={plan.timeout_ms}"
                ) from err
    else:
        results = []
        for segment in segments:
            results.append(_timed_segment(plan, segment))
            if time.monotonic() > deadline:
                raise QueryTimeoutError(
                    f"Query timed out: not finished within timeoutMs={plan.timeout_ms}"
                )
    if time.monotonic() > deadline:
        raise QueryTimeoutError(f"Query timed out: not finished within timeoutMs={plan.timeout_ms}")
    if results:
        _record_segment_cost(plan, 1000.0 * sum(cpu for _, cpu in results) / len(results))
    return combine(plan, [result for result, _ in results])


def _timed_segment(plan: QueryPlan, segment) -> tuple[IntermediateResult, float]:
    """The segment's result and the CPU seconds its thread spent on it (not the time spent
    waiting for the GIL or for a pool thread, which would grow with the load)."""
    cpu = time.thread_time()
    result = _execute_segment_safely(plan, segment)
    return result, time.thread_time() - cpu


def _parallel_pays(plan: QueryPlan, num_segments: int) -> bool:
    """Whether to spread the segments over the pool: when there are several, and the recent
    runs of this query (unknown: assume heavy) cost at least PARALLEL_MIN_SEGMENT_MS of CPU
    per segment."""
    if num_segments < 2 or QUERY_THREADS < 2:
        return False
    cost = _lru_get(_SEGMENT_COST_MS, plan.sql)
    return cost is None or cost >= PARALLEL_MIN_SEGMENT_MS


def _record_segment_cost(plan: QueryPlan, ms_per_segment: float) -> None:
    previous = _lru_get(_SEGMENT_COST_MS, plan.sql)
    smoothed = ms_per_segment if previous is None else 0.5 * previous + 0.5 * ms_per_segment
    _lru_put(_SEGMENT_COST_MS, plan.sql, smoothed)


def _execute_segment_safely(plan: QueryPlan, segment) -> IntermediateResult:
    """One segment's result; a broken segment (unreadable file, engine bug) becomes an
    exception entry (code 200) so the other segments still answer (``partialResult``).
    Query-level errors (bad SQL semantics, timeouts) propagate."""
    try:
        return execute_segment(plan, segment)
    except QueryError:
        raise
    except Exception as err:
        name = getattr(segment, "name", "?")
        failed = IntermediateResult(plan.kind)
        failed.stats["numSegmentsQueried"] = 1
        failed.exceptions.append(
            QueryExecutionError(
                f"QueryExecutionError: segment {name}: {type(err).__name__}: {err}"
            ).to_exception()
        )
        return failed


def run_query(
    sql: str, segments: list, *, table_schema=None, query_options: dict | None = None
) -> dict:
    """Run ``sql`` over local ``segments`` (``ImmutableSegment``s of one table) and return
    Pinot's BrokerResponse JSON as a dict. Never raises for a bad query or a failed segment:
    the error is in ``exceptions`` with Pinot's code (150 parse, 190 table, 200 execution,
    250 timeout, 700/710 validation)."""
    start = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - start) * 1000)

    try:
        schema = table_schema if table_schema is not None else columns_from_segments(segments)
        plan = compile_query(sql, schema, options=query_options)
        names = _table_names(segments)
        if table_schema is not None and hasattr(table_schema, "name"):
            names.add(table_schema.name)
        if plan.raw_table not in names:
            known = ", ".join(sorted(n for n in names if n)) or "none"
            raise TableNotFoundError(
                f"TableDoesNotExistError: table '{plan.table}' does not exist (known: {known})"
            )
        if plan.explain:
            from engine.query.explain import explain

            return explain(plan, segments)
        server_result = execute_server(plan, segments)
        return reduce(plan, [server_result], time_used_ms=elapsed_ms())
    except QueryError as err:
        return error_response(err, time_used_ms=elapsed_ms())
    except RecursionError:
        return error_response(
            QueryExecutionError("Query is nested too deeply"), time_used_ms=elapsed_ms()
        )
    except Exception as err:  # an engine bug must not take the process down; report it as 200
        return error_response(
            QueryExecutionError(f"QueryExecutionError: {type(err).__name__}: {err}"),
            time_used_ms=elapsed_ms(),
        )


__all__ = ["columns_from_segments", "compile_query", "execute_server", "run_query"]
