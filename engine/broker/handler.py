"""One query at the broker: parse, route, prune, scatter, gather, reduce.

The result is Pinot's BrokerResponse JSON (a dict) in every case: a bad query, an unknown
table, a failed or slow server all come back as ``exceptions`` with Pinot's error codes, and
``partialResult`` is true whenever some data could not be read.
"""

from __future__ import annotations

import logging
import threading
import time

import orjson
from cachetools import LRUCache
from sqlglot import exp

from engine.broker.broker_query import BrokerQuery
from engine.broker.errors import SEGMENTS_UNAVAILABLE_ERROR_CODE
from engine.broker.metrics import BrokerMetrics
from engine.broker.pruning import prune
from engine.broker.query_log import QueryLogger
from engine.broker.routes import RoutingSnapshot, ServerAddress
from engine.broker.routing import RoutingManager
from engine.broker.running import RunningQueries, RunningQuery
from engine.broker.scatter import ScatterGather
from engine.broker.selection import BalancedSelector
from engine.broker.time_boundary import TimeBoundary, compute_time_boundary
from engine.clusterstate import OFFLINE, REALTIME, split_table_name
from engine.common.clock import now_ms
from engine.multistage.sql import needs_multistage, parse_request, wants_multistage
from engine.query import QueryError, reduce
from engine.query.errors import (
    QUERY_CANCELLATION_ERROR_CODE,
    QueryCancelledError,
    QueryExecutionError,
    TableNotFoundError,
)
from engine.query.explain import explain_response
from engine.query.intermediate import CONSUMING_KEY, FRESHNESS_KEY, merged_freshness
from engine.query.parser import parse_sql
from engine.query.plan_cache import PlanCache
from engine.query.response import ENGINE_KEY, SINGLE_STAGE, error_response
from engine.query.time_boundary import with_time_boundary
from engine.runtime import SchemaCache
from engine.runtime.metrics import PerTableChildren

log = logging.getLogger(__name__)

_TABLE_CACHE_SIZE = 1024
CLIENT_QUERY_ID = "clientQueryId"  # Pinot's query option: the client's id for a cancel


class QueryRunner:
    def __init__(
        self,
        routing: RoutingManager,
        schemas: SchemaCache,
        selector: BalancedSelector,
        scatter: ScatterGather,
        metrics: BrokerMetrics,
        *,
        running: RunningQueries | None = None,
        broker_id: str = "",
        query_log: QueryLogger | None = None,
    ) -> None:
        self.routing = routing
        self.schemas = schemas
        self.selector = selector
        self.scatter = scatter
        self.metrics = metrics
        self._heads: LRUCache = LRUCache(_TABLE_CACHE_SIZE)  # SQL -> (table, SET options)
        self._prune_cache: LRUCache = LRUCache(_TABLE_CACHE_SIZE)  # (route id, filter) -> kept
        # the same cache by identity: a cached plan hands over the same filter object each
        # time, and hashing its tree for the equality key cost more than the rest of routing
        self._pruned_by_id: dict[tuple[int, int], tuple] = {}
        m = metrics
        # (none in unit tests that only route)
        self._table_metrics = (
            PerTableChildren(m.queries, m.latency, m.docs_scanned, m.partial, m.freshness_lag)
            if m is not None
            else None
        )
        self.plans = PlanCache()
        self.running = running  # the queries GET /queries lists and DELETE /query cancels
        self.broker_id = broker_id  # with the request id, the id servers know a query by
        self.query_log = query_log
        self._lock = threading.Lock()
        self.multistage = None  # the broker's MultiStageHandler (engine.broker.multistage)

    def run(self, query: BrokerQuery) -> dict:
        started = time.monotonic()
        request_id = self.selector.next_request_id()
        choice = wants_multistage(query.sql, query.options, query.multistage)
        if choice and self.multistage is not None:
            return self._run_multistage(query, request_id, started)
        table_label = queried = "unknown"
        phases: dict[str, float] = {}  # Pinot's query phases, ms
        running = None
        if self.running is not None:
            running = self.running.register(
                request_id, query.sql, query.options.get(CLIENT_QUERY_ID)
            )
        query_log = (
            self.query_log if self.query_log is not None and self.query_log.enabled else None
        )
        logged = query_log.received(request_id, query.sql) if query_log is not None else False
        try:
            table = queried = self._table_of(query.sql)
            table_label = split_table_name(table)[0]
            response = self._run(query, table, request_id, started, running, phases)
        except QueryError as err:
            if choice is None and self.multistage is not None and needs_multistage(query.sql):
                # what only the multi-stage engine runs goes there by itself
                return self._run_multistage(query, request_id, started)
            response = error_response(err, time_used_ms=_ms_since(started))
        except RecursionError:
            err = QueryExecutionError("Query is nested too deeply")
            response = error_response(err, time_used_ms=_ms_since(started))
        except Exception as exc:  # a bug must be an answer, never a dropped request
            log.error("query failed: %s", query.sql)
            err = QueryExecutionError.internal("the broker", exc, log)
            response = error_response(err, time_used_ms=_ms_since(started))
        finally:
            if running is not None:
                self.running.unregister(running)
        response["requestId"] = str(request_id)
        response[ENGINE_KEY] = SINGLE_STAGE
        if query_log is not None:
            query_log.answered(logged, lambda: query_log.line(
                response, query.sql, queried,
                running.responses if running is not None else [],
                unavailable=running.unavailable if running is not None else 0,
                client_ip=query.client_ip,
            ), response)  # fmt: skip
        queries, latency, docs_scanned, partial, freshness_lag = self._metrics_of(table_label)
        queries.inc()
        elapsed = time.monotonic() - started
        latency.observe(elapsed)
        self.metrics.record_query(table_label, phases, elapsed * 1000, bool(response["exceptions"]))
        docs_scanned.inc(response.get("numDocsScanned", 0))
        if response.get("partialResult"):
            partial.inc()
        freshness_ms = response.get("minConsumingFreshnessTimeMs") or 0
        if freshness_ms > 0 and response.get("numConsumingSegmentsQueried"):
            lag_ms = max(0, now_ms() - freshness_ms)
            freshness_lag.set(lag_ms)
        return response

    def _run_multistage(self, query: BrokerQuery, request_id: int, started: float) -> dict:
        response = self.multistage.run(query.sql, query.options, request_id)
        tables = response.get("tablesQueried") or ["unknown"]
        queries, latency, docs_scanned, partial, _ = self._metrics_of(
            split_table_name(tables[0])[0]
        )
        queries.inc()
        latency.observe(time.monotonic() - started)
        docs_scanned.inc(response.get("numDocsScanned", 0))
        if response.get("partialResult"):
            partial.inc()
        return response

    def _metrics_of(self, table: str) -> tuple:
        """(queries, latency, docs scanned, partial, freshness lag) children of ``table``."""
        return self._table_metrics.of(table)

    def _table_of(self, sql: str) -> str:
        return self._head(sql)[0]

    def _head(self, sql: str) -> tuple[str, dict[str, str]]:
        """(the table the query reads, its ``SET`` options), parsed once per SQL text."""
        with self._lock:
            head = self._heads.get(sql)
        if head is None:
            parsed = parse_sql(sql)
            head = (parsed.table, dict(parsed.options))
            with self._lock:
                self._heads[sql] = head
        return head

    def tables_of(self, query: BrokerQuery) -> tuple[list[str], dict[str, str]] | None:
        """(every table the query reads, its ``SET`` options) as ``run`` will run it: the
        single-stage engine's one table, or each table a multi-stage query names (joins,
        subqueries, set operations). None when it does not parse (``run`` answers that)."""
        choice = wants_multistage(query.sql, query.options, query.multistage)
        try:
            if not choice:
                table, options = self._head(query.sql)
                return [table], options
        except QueryError:
            if choice is not None or self.multistage is None or not needs_multistage(query.sql):
                return None
        except RecursionError:
            return None
        key = ("multistage", query.sql)
        with self._lock:
            found = self._heads.get(key)
        if found is None:
            try:
                request = parse_request(query.sql)
            except (QueryError, RecursionError):
                return None
            ctes = {cte.alias_or_name for cte in request.tree.find_all(exp.CTE)}
            names = {t.name for t in request.tree.find_all(exp.Table) if t.name}
            found = (sorted(names - ctes), dict(request.options))
            with self._lock:
                self._heads[key] = found
        return found

    def routed_tables(self, table: str) -> list[str]:
        """The routed tables (with type) a query on ``table`` reads: both halves of a hybrid
        table's raw name."""
        snapshot = self.routing.snapshot
        raw, table_type = split_table_name(table)
        return [table] if table_type else snapshot.tables_of(raw)

    def _run(
        self,
        query: BrokerQuery,
        table: str,
        request_id: int,
        started: float,
        running: RunningQuery | None = None,
        phases: dict | None = None,
    ) -> dict:
        snapshot = self.routing.snapshot
        raw, table_type = split_table_name(table)
        tables = [table] if table_type else snapshot.tables_of(raw)
        if not tables or any(t not in snapshot.routes for t in tables):
            raise TableNotFoundError(f"TableDoesNotExistError: table '{table}' does not exist")
        snapshot.check_routable(tables)  # e.g. an unreadable segment lineage: never a wrong answer
        plan = self.plans.compile(query.sql, self.schemas.get(raw), query.options)
        compiled = time.monotonic()
        if running is not None and plan.options.get(CLIENT_QUERY_ID):  # SET clientQueryId
            self.running.set_client_query_id(running, plan.options[CLIENT_QUERY_ID])
        trace = query.trace or plan.trace  # the request's flag or the trace query option
        server_options = {**query.options, "trace": "true"} if trace else query.options
        deadline = started + plan.timeout_ms / 1000.0
        boundary = self.time_boundary(snapshot, raw) if len(tables) == 2 else None
        requests: list[tuple[ServerAddress, bytes]] = []
        exceptions: list[dict] = []
        num_routed = num_pruned = 0
        for resource in tables:
            clause = boundary.clause(split_table_name(resource)[1]) if boundary else None
            assignment, unavailable, pruned = self.route(
                snapshot, resource, with_time_boundary(plan, clause).filter, request_id
            )
            num_pruned += pruned
            num_routed += sum(len(s) for s in assignment.values()) + len(unavailable)
            if unavailable:
                if running is not None:
                    running.unavailable += len(unavailable)
                shown = ", ".join(unavailable[:10]) + (" ..." if len(unavailable) > 10 else "")
                exceptions.append({
                    "errorCode": SEGMENTS_UNAVAILABLE_ERROR_CODE,
                    "message": f"{len(unavailable)} segment(s) of {resource} are unavailable "
                               f"(no live server serves them): {shown}",
                })  # fmt: skip
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            for instance_id, segments in sorted(assignment.items()):
                body = orjson.dumps({
                    "requestId": request_id, "sql": query.sql, "tableNameWithType": resource,
                    "segments": segments,
                    "queryOptions": server_options, "timeoutMs": remaining_ms,
                    "timeBoundary": clause, "brokerId": self.broker_id,
                })  # fmt: skip
                requests.append((snapshot.servers[instance_id], body))
        routed = time.monotonic()
        if running is not None:
            running.servers = tuple({server.instance_id: server for server, _ in requests}.values())
            if running.cancelled:  # cancelled while it was routed: ask no server
                raise QueryCancelledError(f"Cancelled on: {self.broker_id}")
        responses = self.scatter.scatter(requests, deadline)
        gathered = time.monotonic()
        if phases is not None:
            phases["requestCompilation"] = (compiled - started) * 1000
            phases["queryRouting"] = (routed - compiled) * 1000
            phases["scatterGather"] = (gathered - routed) * 1000
        if running is not None:
            running.responses = responses
        results = [r.result for r in responses if r.result is not None]
        exceptions += [r.exception for r in responses if r.exception is not None]
        if running is not None and running.cancelled:
            exceptions = _with_cancellation(exceptions, self.broker_id)
        if plan.explain:
            response = explain_response(plan, [r.explain for r in responses if r.explain])
            response["exceptions"] = exceptions
            response["partialResult"] = bool(exceptions)
            response["numServersQueried"] = len(requests)
            response["numServersResponded"] = sum(r.responded for r in responses)
            response["timeUsedMs"] = _ms_since(started)
            return response
        reduce_started = time.monotonic()
        response = reduce(
            plan, results, time_used_ms=_ms_since(started),
            num_servers_queried=len(requests),
            num_servers_responded=sum(r.responded for r in responses),
        )  # fmt: skip
        reduce_ms = _ms_since(reduce_started)
        if phases is not None:
            phases["reduce"] = (time.monotonic() - reduce_started) * 1000
        response["exceptions"] = response["exceptions"] + exceptions
        response["partialResult"] = bool(response["exceptions"])
        response["numSegmentsQueried"] = num_routed
        response["numSegmentsPrunedByBroker"] = num_pruned
        if trace:
            response["traceInfo"] = trace_info(responses)
            response["brokerReduceTimeMs"] = reduce_ms  # Pinot's name for the merge's time
        response["timeUsedMs"] = _ms_since(started)
        return response

    def route(
        self, snapshot: RoutingSnapshot, resource: str, where, request_id: int
    ) -> tuple[dict[str, list[str]], list[str], int]:
        """(server -> segments, unavailable segments, number pruned) for one table."""
        route = snapshot.routes[resource]
        kept, num_candidates = self._pruned(route, where)
        assignment, unavailable = self.selector.select(route, kept, snapshot, request_id)
        return assignment, unavailable, num_candidates - len(kept)

    def _pruned(self, route, where) -> tuple[list[str], int]:
        """(names of the route's segments ``where`` may match, number of segments). Kept per
        route and filter: a route is immutable (a routing change builds a new one), so a
        repeated query prunes once per routing change, not once per query."""
        id_key = (id(route), id(where))
        hit = self._pruned_by_id.get(id_key)
        # both objects are held by the entry, so their ids cannot be reused meanwhile
        if hit is not None and hit[0] is route and hit[1] is where:
            return hit[2], hit[3]
        kept, num_candidates = self._pruned_by_value(route, where)
        with self._lock:
            if len(self._pruned_by_id) >= _TABLE_CACHE_SIZE:
                self._pruned_by_id.clear()
            self._pruned_by_id[id_key] = (route, where, kept, num_candidates)
        return kept, num_candidates

    def _pruned_by_value(self, route, where) -> tuple[list[str], int]:
        try:
            key = (id(route), where)
            hash(key)
        except TypeError:  # an unhashable literal: prune afresh
            key = None
        if key is not None:
            with self._lock:
                hit = self._prune_cache.get(key)
            if hit is not None and hit[0] is route:  # the route is held, its id not reused
                return hit[1], hit[2]
        candidates = list(route.segments.values())
        kept = [s.name for s in prune(
            candidates, where, time_column=route.time_column,
            time_unit_ms=route.time_unit_ms, partitioning=route.partitioning,
        )]  # fmt: skip
        if key is not None:
            with self._lock:
                self._prune_cache[key] = (route, kept, len(candidates))
        return kept, len(candidates)

    def time_boundary(self, snapshot: RoutingSnapshot, raw_table: str) -> TimeBoundary | None:
        offline = snapshot.routes.get(f"{raw_table}_{OFFLINE}")
        if offline is None or f"{raw_table}_{REALTIME}" not in snapshot.routes:
            return None
        return compute_time_boundary(offline)


def trace_info(responses) -> dict[str, dict]:
    """Pinot's ``traceInfo``, by server: the round trip as the broker saw it (``timeUsedMs``)
    and the server's trace (``engine.query.trace``): its own stages and each segment's
    operators, with its consuming segments queried and their freshness. A server asked twice
    (a hybrid table's two halves) has both halves merged."""
    out: dict[str, dict] = {}
    for r in responses:
        entry = out.setdefault(r.server.instance_id, {
            "timeUsedMs": 0, "responded": True, "serverTimeMs": 0.0, "gcPauseMs": 0.0,
            CONSUMING_KEY: 0, FRESHNESS_KEY: 0, "operators": [], "segments": [],
        })  # fmt: skip
        entry["timeUsedMs"] = max(entry["timeUsedMs"], r.elapsed_ms)
        entry["responded"] = entry["responded"] and r.responded
        trace = r.result.trace if r.result is not None else None
        if trace:
            for key in ("serverTimeMs", "gcPauseMs"):  # the server's time, the GC pauses in it
                entry[key] = round(entry[key] + trace.get(key, 0), 3)
            entry[FRESHNESS_KEY] = merged_freshness([entry, trace])
            entry[CONSUMING_KEY] += trace.get(CONSUMING_KEY, 0)
            entry["operators"].extend(trace.get("operators", ()))
            entry["segments"].extend(trace.get("segments", ()))
    return out


def _with_cancellation(exceptions: list[dict], broker_id: str) -> list[dict]:
    """A cancelled query's exceptions lead with QUERY_CANCELLATION, whether or not every
    server answered with it (one may have finished before the cancel reached it)."""
    if any(e.get("errorCode") == QUERY_CANCELLATION_ERROR_CODE for e in exceptions):
        return exceptions
    return [QueryCancelledError(f"Cancelled on: {broker_id}").to_exception(), *exceptions]


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
