"""In-process query entry points, and the query state a process owns.

A ``QueryEngine`` holds what queries share across requests: the plan cache (``PlanCache``),
the decoded-column cache (``DecodedCache``), the pool that runs a query's segments in
parallel, and the measured CPU cost per segment of recent queries. A server instance owns
one, built from ``QuerySettings`` read once at start-up.

The module functions ``compile_query``, ``execute_server`` and ``run_query`` serve in-process
callers (the ``sprig`` CLI, benchmarks, tests) with a default engine created on first use
from the environment. ``run_query`` executes on local segments, combines like a server and
reduces like a broker, returning Pinot's BrokerResponse JSON as a dict; it never raises for a
bad query: errors come back in ``exceptions``.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from cachetools import LRUCache

from engine.common.cancel import WorkToken, working_on
from engine.query.combine import combine
from engine.query.decoded_cache import DecodedCache
from engine.query.errors import (
    QueryCancelledError,
    QueryError,
    QueryExecutionError,
    QueryTimeoutError,
    TableNotFoundError,
)
from engine.query.executor import execute_segment
from engine.query.intermediate import IntermediateResult
from engine.query.plan import ColumnInfo, QueryPlan
from engine.query.plan_cache import PlanCache
from engine.query.reduce import reduce
from engine.query.response import error_response
from engine.query.settings import QuerySettings
from engine.query.trace import new_trace, operator_entry
from engine.spi.table_name import split_table_name


class QueryEngine:
    def __init__(self, settings: QuerySettings | None = None) -> None:
        self.settings = settings or QuerySettings()
        self.plans = PlanCache(self.settings.plan_cache_size)
        self.decoded = DecodedCache(self.settings.decoded_cache_bytes)
        self._pool: ThreadPoolExecutor | None = None
        self._segment_cost_ms: LRUCache = LRUCache(self.settings.plan_cache_size)  # SQL -> ms
        self._lock = threading.Lock()

    def compile(self, sql: str, schema=None, options: dict | None = None) -> QueryPlan:
        """The plan of ``sql`` (see ``PlanCache.compile``); raises QueryError subclasses."""
        return self.plans.compile(sql, schema, options)

    def forget_segment(self, segment) -> None:
        """Drop an unloaded or replaced segment's decoded columns now."""
        self.decoded.forget(segment)

    def close(self) -> None:
        """Stop the pool's threads (at process stop); a later parallel query starts a new
        pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def segment_cost_ms(self, sql: str) -> float | None:
        """The smoothed CPU ms per segment of ``sql``'s recent runs; None before the first."""
        with self._lock:
            return self._segment_cost_ms.get(sql)

    def execute_server(
        self,
        plan: QueryPlan,
        segments: list,
        *,
        deadline: float | None = None,
        parallel: bool = True,
        token: WorkToken | None = None,
        valid_docs: list | None = None,
    ) -> IntermediateResult:
        """Server side: run ``plan`` on each segment and combine (one IntermediateResult).
        ``deadline`` is in ``time.monotonic()`` seconds (default: the plan's timeout).
        ``parallel=False`` runs the segments one after the other in this thread even when
        the pool would pay (the caller knows the cores are busy). ``token`` (default: one
        with the deadline) stops the work at the next checkpoint once cancelled or past
        its deadline, in every thread the query uses (``engine.common.cancel``).
        ``valid_docs``: per segment the docs an upsert table counts (a BitMap), or None for
        every doc."""
        started = time.monotonic()
        if token is None:
            token = QueryToken(plan.timeout_ms, deadline or (started + plan.timeout_ms / 1000.0))
        valid_docs = valid_docs or [None] * len(segments)
        if parallel and self._parallel_pays(plan, len(segments)):
            futures = [
                self._get_pool().submit(self._timed_segment, plan, s, token, v)
                for s, v in zip(segments, valid_docs, strict=True)
            ]
            timed = _gather(futures, token)
            cpu_s = sum(cpu for _, cpu in timed)
            results = [result for result, _ in timed]
        else:
            # one after the other in this thread: its CPU time over the loop is theirs
            cpu = time.thread_time()
            results = []
            with working_on(token):
                for segment, valid in zip(segments, valid_docs, strict=True):
                    token.check()
                    results.append(self._run_segment(plan, segment, valid))
            cpu_s = time.thread_time() - cpu
        token.check()
        if results:
            self._record_segment_cost(plan, 1000.0 * cpu_s / len(results))
        if not plan.trace:
            return combine(plan, results)
        combine_started = time.perf_counter()
        combined = combine(plan, results)
        combined.trace = combined.trace or new_trace()
        combined.trace["operators"].append(
            operator_entry("CombineOperator", time.perf_counter() - combine_started)
        )
        return combined

    def run(
        self, sql: str, segments: list, *, table_schema=None, query_options: dict | None = None
    ) -> dict:
        """See ``run_query``."""
        start = time.monotonic()

        def elapsed_ms() -> int:
            return int((time.monotonic() - start) * 1000)

        try:
            schema = table_schema if table_schema is not None else columns_from_segments(segments)
            plan = self.compile(sql, schema, query_options)
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
            server_result = self.execute_server(plan, segments)
            response = reduce(plan, [server_result], time_used_ms=elapsed_ms())
            if plan.trace:  # in process, the one "server" is this process
                response["traceInfo"] = {"local": server_result.trace or new_trace()}
            return response
        except QueryError as err:
            return error_response(err, time_used_ms=elapsed_ms())
        except RecursionError:
            return error_response(
                QueryExecutionError("Query is nested too deeply"), time_used_ms=elapsed_ms()
            )
        except Exception as err:  # an engine bug must not take the process down; report it
            return error_response(
                QueryExecutionError(f"QueryExecutionError: {type(err).__name__}: {err}"),
                time_used_ms=elapsed_ms(),
            )

    # --- parallelism -------------------------------------------------------------------------
    def _get_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.settings.threads, thread_name_prefix="sprig-query"
                )
            return self._pool

    def _parallel_pays(self, plan: QueryPlan, num_segments: int) -> bool:
        """Whether to spread the segments over the pool: when there are several, and the
        recent runs of this query (unknown: assume heavy) cost at least
        ``parallel_min_segment_ms`` of CPU per segment."""
        if num_segments < 2 or self.settings.threads < 2:
            return False
        cost = self.segment_cost_ms(plan.sql)
        return cost is None or cost >= self.settings.parallel_min_segment_ms

    def _record_segment_cost(self, plan: QueryPlan, ms_per_segment: float) -> None:
        with self._lock:
            previous = self._segment_cost_ms.get(plan.sql)
            smoothed = ms_per_segment if previous is None else 0.5 * previous + 0.5 * ms_per_segment
            self._segment_cost_ms[plan.sql] = smoothed  # evicts the least recently used

    def _run_segment(self, plan: QueryPlan, segment, valid=None) -> IntermediateResult:
        return _execute_segment_safely(plan, segment, self.decoded, valid)

    def _timed_segment(
        self, plan: QueryPlan, segment, token: WorkToken, valid=None
    ) -> tuple[IntermediateResult, float]:
        """The segment's result and the CPU seconds its thread spent on it (not the time spent
        waiting for the GIL or for a pool thread, which would grow with the load)."""
        with working_on(token):
            token.check()  # queued behind a long segment: maybe cancelled meanwhile
            cpu = time.thread_time()
            result = self._run_segment(plan, segment, valid)
            return result, time.thread_time() - cpu


# how often a request thread waiting for its segments looks at its token: a cancel or the
# deadline then ends the wait even while every segment is inside a long operator
_WAIT_SLICE_S = 0.02


def _gather(futures: list, token: WorkToken) -> list:
    """The futures' results in order. The first error, a cancel or the deadline stops the
    others: queued segments are dropped and running ones stop at their next checkpoint."""
    pending = set(futures)
    try:
        while pending:
            remaining = token.deadline - time.monotonic() if token.deadline else _WAIT_SLICE_S
            done, pending = wait(
                pending, timeout=max(min(remaining, _WAIT_SLICE_S), 0.001),
                return_when=FIRST_EXCEPTION,
            )  # fmt: skip
            for future in done:
                if future.exception() is not None:
                    raise future.exception()
            token.check()
    except BaseException:
        for future in pending:
            future.cancel()
        token.cancel()  # the running ones stop at their next checkpoint
        raise
    return [future.result() for future in futures]


class QueryToken(WorkToken):
    """The token of one query's work: past its deadline, Pinot's EXECUTION_TIMEOUT (250) naming
    ``timeout_ms``; cancelled, QUERY_CANCELLATION (503, ``Cancelled on: <where>``)."""

    __slots__ = ("timeout_ms", "where")

    def __init__(self, timeout_ms: float, deadline: float | None, where: str = "") -> None:
        super().__init__(deadline)
        self.timeout_ms = timeout_ms
        self.where = where

    def timeout_error(self) -> QueryTimeoutError:
        return QueryTimeoutError(
            f"Query timed out: not finished within timeoutMs={self.timeout_ms}"
        )

    def cancel_error(self) -> QueryCancelledError:
        return QueryCancelledError(f"Cancelled on: {self.where or 'this process'}")


_default: QueryEngine | None = None
_default_lock = threading.Lock()


def default_engine() -> QueryEngine:
    """The engine of in-process callers, created on first use with ``QuerySettings.from_env``.
    A server instance never uses it: it owns its own."""
    global _default
    with _default_lock:
        if _default is None:
            _default = QueryEngine(QuerySettings.from_env())
        return _default


def compile_query(sql: str, schema=None, *, options: dict | None = None) -> QueryPlan:
    """The plan of ``sql`` (cached). ``schema``: an ``engine.spi.schema.Schema`` or a dict of
    ``ColumnInfo``; with it unknown columns are rejected (710). ``options`` override the
    query's own ``SET`` options. Raises QueryError subclasses."""
    return default_engine().compile(sql, schema, options)


def execute_server(
    plan: QueryPlan, segments: list, *, deadline: float | None = None
) -> IntermediateResult:
    """``QueryEngine.execute_server`` on the default engine."""
    return default_engine().execute_server(plan, segments, deadline=deadline)


def run_query(
    sql: str, segments: list, *, table_schema=None, query_options: dict | None = None
) -> dict:
    """Run ``sql`` over local ``segments`` (``ImmutableSegment``s of one table) and return
    Pinot's BrokerResponse JSON as a dict. Never raises for a bad query or a failed segment:
    the error is in ``exceptions`` with Pinot's code (150 parse, 190 table, 200 execution,
    250 timeout, 700/710 validation)."""
    return default_engine().run(
        sql, segments, table_schema=table_schema, query_options=query_options
    )


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


def _execute_segment_safely(
    plan: QueryPlan, segment, cache: DecodedCache | None, valid=None
) -> IntermediateResult:
    """One segment's result; a broken segment (unreadable file, engine bug) becomes an
    exception entry (code 200) so the other segments still answer (``partialResult``).
    Query-level errors (bad SQL semantics, timeouts) propagate."""
    try:
        return execute_segment(plan, segment, cache, valid)
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


__all__ = [
    "QueryEngine",
    "QuerySettings",
    "columns_from_segments",
    "compile_query",
    "default_engine",
    "execute_server",
    "run_query",
]
