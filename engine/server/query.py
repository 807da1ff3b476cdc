"""The server's query endpoint: run one plan over the listed segments, combine, and answer
with the mergeable intermediate result (an Arrow IPC stream, or a numeric frame for numeric
keys and states: see ``engine.query.intermediate``).

The broker sends JSON::

    {"requestId": 7, "sql": "...", "tableNameWithType": "t_OFFLINE", "segments": [...],
     "queryOptions": {...}, "timeoutMs": 9500,      # the client's options; the time left
     "timeBoundary": {"column": "ts", "op": "<=", "value": 18000}}   # hybrid tables only

A segment the server does not serve (not loaded, in ERROR, moved away) is reported as an
exception with code 235 in the result, the others are still answered. A bad request is a
400 and a query error a 400 with ``{"errorCode", "message"}``; a timeout is code 250.
``EXPLAIN PLAN FOR`` is answered with JSON ``{"segmentPlans": [...]}`` (see
``engine.query.explain.segment_plans``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time

import orjson

from engine.clusterstate import split_table_name
from engine.common import clock
from engine.query import QueryError, numeric_frame
from engine.query.errors import QueryExecutionError
from engine.query.explain import segment_plans
from engine.query.intermediate import CONSUMING_KEY, FRESHNESS_KEY
from engine.query.plan import QueryPlan
from engine.query.runner import QueryEngine, columns_from_segments
from engine.query.time_boundary import BOUNDARY_OPS, with_time_boundary
from engine.query.trace import gc_clock, new_trace, operator_entry
from engine.runtime import Request, Response, SchemaCache
from engine.runtime.metrics import PerTableChildren
from engine.server.errors import BadQueryRequest
from engine.server.metrics import ServerMetrics
from engine.server.segments import SegmentDataManager
from engine.spi.table_name import REALTIME

log = logging.getLogger(__name__)

SEGMENTS_MISSING_ERROR_CODE = 235
ARROW_STREAM = "application/vnd.apache.arrow.stream"


@dataclasses.dataclass
class ServerQueryRequest:
    request_id: int
    sql: str
    table: str
    segments: list[str]
    options: dict[str, str]
    time_boundary: dict | None
    budget_ms: float | None = None

    @classmethod
    def from_bytes(cls, body: bytes) -> ServerQueryRequest:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadQueryRequest(f"the request body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise BadQueryRequest("the request body must be a JSON object")
        sql, table, segments = data.get("sql"), data.get("tableNameWithType"), data.get("segments")
        if not isinstance(sql, str) or not sql.strip():
            raise BadQueryRequest("'sql' must be a non-empty string")
        if not isinstance(table, str) or not table:
            raise BadQueryRequest("'tableNameWithType' must be a table name with its type")
        if not isinstance(segments, list) or not all(isinstance(s, str) for s in segments):
            raise BadQueryRequest("'segments' must be a list of segment names")
        options = data.get("queryOptions") or {}
        if not isinstance(options, dict):
            raise BadQueryRequest("'queryOptions' must be an object")
        boundary = data.get("timeBoundary")
        if boundary is not None and (
            not isinstance(boundary, dict)
            or not isinstance(boundary.get("column"), str)
            or boundary.get("op") not in BOUNDARY_OPS
            or "value" not in boundary
        ):
            raise BadQueryRequest("'timeBoundary' must be {column, op ('<=' or '>'), value}")
        budget = data.get("timeoutMs")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int | float)):
            raise BadQueryRequest("'timeoutMs' must be a number of milliseconds")
        return cls(int(data.get("requestId") or 0), sql, table, segments,
                   {str(k): str(v) for k, v in options.items()}, boundary, budget)  # fmt: skip


class QueryExecutor:
    def __init__(
        self,
        instance_id: str,
        segments: SegmentDataManager,
        schemas: SchemaCache,
        metrics: ServerMetrics,
        engine: QueryEngine,
    ) -> None:
        self.instance_id = instance_id
        self.segments = segments
        self.schemas = schemas
        self.metrics = metrics
        self.engine = engine
        self.parallel_below = os.cpu_count() or 1
        self.gc = gc_clock()
        self._in_flight = 0
        self._lock = threading.Lock()
        m = metrics
        # (none in unit tests that only route)
        self._table_metrics = (
            PerTableChildren(
                m.queries, m.query_errors, m.latency, m.docs_scanned, m.segments_queried
            )
            if m is not None
            else None
        )

    def _metrics_of(self, table: str) -> tuple:
        """(queries, errors, latency, docs scanned, segments queried) children of ``table``."""
        return self._table_metrics.of(table)

    def handle(self, request: Request) -> Response:
        started = time.monotonic()
        try:
            query = ServerQueryRequest.from_bytes(request.body)
        except BadQueryRequest as exc:
            return Response.json({"errorCode": 200, "message": str(exc)}, 400)
        table = query.table
        with self._lock:
            self._in_flight += 1
        try:
            body = self.execute(query, started)
        except QueryError as exc:
            self._metrics_of(table)[1].inc()
            return Response.json(exc.to_exception(), 400)
        finally:
            with self._lock:
                self._in_flight -= 1
            queries, _, latency, _, _ = self._metrics_of(table)
            queries.inc()
            latency.observe(time.monotonic() - started)
        if body[:1] == b"{":
            content_type = "application/json"
        elif body[: len(numeric_frame.MAGIC)] == numeric_frame.MAGIC:
            content_type = numeric_frame.MEDIA_TYPE
        else:
            content_type = ARROW_STREAM
        return Response(200, body, content_type)

    def _run(self, plan: QueryPlan, segments: list, deadline: float):
        """Segments in parallel (the engine's pool) while this server has cores to spare;
        one after the other in this thread once as many queries as cores are running, where
        parallelism no longer shortens anything and the hand-offs only cost."""
        parallel = len(segments) >= 2 and self._in_flight <= self.parallel_below
        return self.engine.execute_server(plan, segments, deadline=deadline, parallel=parallel)

    def execute(self, query: ServerQueryRequest, started: float) -> bytes:
        found, missing = self.segments.online_segments(query.table, query.segments)
        schema = self.schemas.get(split_table_name(query.table)[0])
        if schema is None and found:
            schema = columns_from_segments(found)
        plan = self.engine.compile(query.sql, schema, query.options)
        plan = with_time_boundary(plan, query.time_boundary)
        budget_ms = plan.timeout_ms
        if query.budget_ms is not None:  # what is left of the broker's budget
            budget_ms = min(budget_ms, query.budget_ms)
        deadline = started + budget_ms / 1000.0
        if plan.explain:
            return orjson.dumps({"segmentPlans": segment_plans(plan, found)})
        planned = time.monotonic()
        gc_before = self.gc.total_ms()
        try:
            result = self._run(plan, found, deadline)
            if plan.kind == "aggregation" and result.decoded_states(plan) is None:
                # every segment was pruned: send the aggregations' empty states (the
                # identity of their merge) so the result can be serialized and merged
                result.states = [fn.empty_state(1) for fn in plan.aggregations]
        except QueryError:
            raise
        except Exception as exc:  # an engine bug fails this query, not the server
            raise QueryExecutionError.internal(self.instance_id, exc, log) from exc
        _consuming_stats(result.stats, found, split_table_name(query.table)[1] == REALTIME)
        if missing:
            shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
            result.exceptions.append({
                "errorCode": SEGMENTS_MISSING_ERROR_CODE,
                "message": f"{len(missing)} segment(s) of {query.table} not served by "
                           f"{self.instance_id}: {shown}",
            })  # fmt: skip
        if plan.trace:
            self._add_trace(result, started, planned, len(missing))
            result.trace["gcPauseMs"] = round(self.gc.total_ms() - gc_before, 3)
        _, _, _, docs_scanned, segments_queried = self._metrics_of(query.table)
        docs_scanned.inc(result.stats.get("numDocsScanned", 0))
        segments_queried.inc(len(found))
        try:
            return result.to_bytes(plan)
        except Exception as exc:  # an engine bug fails this query, not the server
            raise QueryExecutionError.internal(self.instance_id, exc, log) from exc

    def _add_trace(self, result, started: float, planned: float, num_missing: int) -> None:
        """The server's own stages: decoding the request and planning, then running the
        segments (their timings are in ``segments``) and combining them."""
        trace = result.trace = result.trace or new_trace()
        now = time.monotonic()
        trace["operators"][:0] = [
            operator_entry("ServerQueryPlanning", planned - started),
            operator_entry("ServerQueryExecution", now - planned),
        ]
        trace["serverTimeMs"] = round((now - started) * 1000.0, 3)
        trace["numSegmentsMissing"] = num_missing
        # this server's part of the answer's freshness: which server's segments set it
        for key in (CONSUMING_KEY, FRESHNESS_KEY):
            trace[key] = result.stats.get(key, 0)


def _consuming_stats(stats: dict, segments: list, realtime: bool = True) -> None:
    """Pinot's numConsumingSegmentsQueried and minConsumingFreshnessTimeMs over the CONSUMING
    segments asked for (before pruning: an idle partition still says how fresh the table is).
    Only consuming segments' snapshots have ``freshness_ms``. Without one that has rows, a
    REALTIME table reports, as Pinot does, a stand-in: the newest of its committed segments'
    creation (the build at the commit), or of their time column's end when that is unknown.
    An OFFLINE table reports nothing (0). The broker weighs a stand-in below a consuming
    segment's freshness (``engine.query.intermediate.merged_freshness``)."""
    if not realtime:  # an OFFLINE table has no consuming segments
        stats[CONSUMING_KEY] = stats[FRESHNESS_KEY] = 0
        return
    now_ms = clock.now_ms()
    consuming = [s for s in segments if hasattr(s, "freshness_ms")]
    fresh = [f for f in (s.freshness_ms(now_ms) for s in consuming) if f is not None and f > 0]
    if not fresh:
        committed = [s for s in segments if not hasattr(s, "freshness_ms")]
        fresh = [max(map(_committed_freshness, committed), default=0)]
    stats[CONSUMING_KEY] = len(consuming)
    stats[FRESHNESS_KEY] = min(fresh, default=0)


def _committed_freshness(segment) -> int:
    """A committed segment's stand-in freshness (epoch ms, 0 when unknown): its creation,
    else the end of its time column (Pinot's indexCreationTime, else its end time)."""
    for value in (getattr(segment.metadata, "creation_time", None),
                  getattr(segment.metadata, "end_time_ms", None)):  # fmt: skip
        if value is not None and value > 0:
            return int(value)
    return 0
