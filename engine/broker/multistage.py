"""The broker's multi-stage query path: catalog and routing for the planner, dispatch of
the stages to the servers, stage 0 here, and Pinot's ``BrokerResponseNativeV2``.

A query reaches it with ``useMultistageEngine=true``, through ``POST /query`` (Pinot's
multi-stage endpoint), or by itself when the single-stage engine cannot run it (a join,
subquery, window function, set operation or CTE); ``queryEngine`` in the answer says which
engine ran it.
"""

from __future__ import annotations

import logging
import time

import orjson
import pyarrow as pa
import urllib3

from engine.broker.errors import SEGMENTS_UNAVAILABLE_ERROR_CODE
from engine.broker.routes import RoutingSnapshot
from engine.clusterstate import split_table_name
from engine.multistage.compiler import CompiledQuery
from engine.multistage.coordinator import Coordinator
from engine.multistage.errors import classify
from engine.multistage.fragment import place
from engine.multistage.logical import TableInfo
from engine.multistage.mailbox import MailboxClient, Mailboxes, accept
from engine.multistage.options import DEFAULT_TIMEOUT_MS, number
from engine.multistage.plan_cache import PlanCache
from engine.multistage.stats import stage_stats, totals
from engine.query.errors import QueryError, QueryExecutionError
from engine.query.response import ENGINE_KEY, MULTI_STAGE, column_json, error_response
from engine.runtime import Request, Response
from engine.runtime.http_limits import MAX_BODY_BYTES
from engine.runtime.outbound import reply_error

log = logging.getLogger(__name__)


class HttpTransport:
    def __init__(self) -> None:
        self.http = urllib3.PoolManager(num_pools=32, maxsize=16)

    def submit(self, address: str, payload: dict, deadline: float) -> dict:
        timeout = max(deadline - time.monotonic(), 0.05) + 2.0
        try:
            response = self.http.request(
                "POST", f"http://{address}/multistage/submit", body=orjson.dumps(payload),
                headers={"Content-Type": "application/json"}, retries=False,
                timeout=urllib3.Timeout(connect=2.0, read=timeout),
            )  # fmt: skip
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise TimeoutError(str(exc)) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(str(exc)) from exc
        if response.status != 200:
            raise ConnectionError(reply_error(response.status, response.data))
        return orjson.loads(response.data)

    def cancel(self, address: str, request_id: int) -> None:
        try:
            self.http.request(
                "POST",
                f"http://{address}/multistage/cancel?requestId={request_id}",
                retries=False,
                timeout=urllib3.Timeout(connect=1.0, read=2.0),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(str(exc)) from exc


class MultiStageHandler:
    def __init__(self, runner, address: str, broker_id: str) -> None:
        """``runner``: the broker's ``QueryRunner`` (routing, schemas, selector)."""
        self.runner = runner
        self.address = address
        self.broker_id = broker_id
        self.mailboxes = Mailboxes()
        self.client = MailboxClient(self.mailboxes, address)
        self.coordinator = Coordinator(self.mailboxes, self.client, HttpTransport())
        self.plans = PlanCache()

    def routes(self, router) -> None:
        # stage 0's input comes in messages of up to 16 MB
        router.add("POST", "/multistage/mailbox", self._mailbox, max_body_bytes=MAX_BODY_BYTES)

    def _mailbox(self, request: Request) -> Response:
        try:
            accept(self.mailboxes, request.query, request.body)
        except (ValueError, orjson.JSONDecodeError) as exc:
            return Response.error(400, str(exc))
        return Response.text("OK")

    # --- a query -----------------------------------------------------------------------------
    def run(self, sql: str, options: dict[str, str], request_id: int) -> dict:
        started = time.monotonic()
        try:
            response = self._run(sql, options, request_id, started)
        except QueryError as err:
            response = error_response(err, time_used_ms=_ms(started))
        except RecursionError:
            response = error_response(QueryExecutionError("Query is nested too deeply"),
                                      time_used_ms=_ms(started))  # fmt: skip
        except Exception as exc:  # a bug must be an answer, never a dropped request
            log.exception("multi-stage query failed: %s", sql)
            response = error_response(classify(exc), time_used_ms=_ms(started))
        response[ENGINE_KEY] = MULTI_STAGE
        response["requestId"] = str(request_id)
        response["brokerId"] = self.broker_id
        return response

    def _run(self, sql: str, options: dict[str, str], request_id: int, started: float) -> dict:
        snapshot = self.runner.routing.snapshot
        planned = self.plans.plan(sql, options, lambda name: self.catalog(snapshot, name))
        compiled = planned.compiled
        timeout_ms = number(compiled.options, "timeoutMs", DEFAULT_TIMEOUT_MS)
        deadline = started + timeout_ms / 1000.0
        servers = {i: f"{a.host}:{a.port}" for i, a in snapshot.servers.items()
                   if i in snapshot.live}  # fmt: skip
        if not servers:
            raise QueryExecutionError("No live server to run the query on")
        exceptions: list[dict] = []

        def route(raw: str, everything_on: str | None = None):
            return self._route(snapshot, raw, request_id, exceptions, everything_on)

        def partitions(raw: str, column: str):
            return segments_by_partition(snapshot, raw, column)

        stages = place(planned.stages, route, servers, self.address, partitions,
                       compiled.limits.parallelism)  # fmt: skip
        if compiled.request.explain:
            return explain_response(compiled, stages, started, planned.exchange_stages)
        table, outcome = self.coordinator.execute(compiled, stages, request_id, deadline, servers)
        if outcome.error is not None:
            response = error_response(outcome.error, time_used_ms=_ms(started))
            response["stageStats"] = stage_stats(stages, outcome.stats)
            return response
        return self._response(compiled, stages, table, outcome, exceptions, started)

    def _response(self, compiled: CompiledQuery, stages, table, outcome, exceptions,
                  started) -> dict:  # fmt: skip
        types = compiled.column_types
        columns = [column_json(_plain(table.column(i)), t) for i, t in enumerate(types)]
        rows = [list(r) for r in zip(*columns, strict=True)] if columns else []
        sums = totals(outcome.stats)
        servers = {s["server"] for s in outcome.stats if s["server"] != "broker"}
        response = {
            "resultTable": {"dataSchema": {"columnNames": compiled.column_names,
                                           "columnDataTypes": types}, "rows": rows},
            "numRowsResultSet": len(rows),
            "partialResult": bool(exceptions),
            "exceptions": exceptions,
            "numGroupsLimitReached": sums["flags"].get("numGroupsLimitReached", False),
            "maxRowsInJoinReached": sums["flags"].get("maxRowsInJoinReached", False),
            "maxRowsInJoin": compiled.limits.max_rows_in_join,
            "maxRowsInWindowReached": sums["flags"].get("maxRowsInWindowReached", False),
            "maxRowsInWindow": compiled.limits.max_rows_in_window,
            "timeUsedMs": _ms(started),
            "stageStats": stage_stats(stages, outcome.stats),
            "numServersQueried": len(servers),
            "numServersResponded": len(servers),
            "tablesQueried": compiled.tables,
        }  # fmt: skip
        response.update(sums["leaf"])
        return response

    def catalog(self, snapshot: RoutingSnapshot, name: str) -> TableInfo | None:
        raw, table_type = split_table_name(name)
        tables = [name] if table_type else snapshot.tables_of(raw)
        if not tables or any(t not in snapshot.routes for t in tables):
            lowered = [r for r in snapshot.routes if split_table_name(r)[0].lower() == raw.lower()]
            if not lowered:
                return None
            raw = split_table_name(lowered[0])[0]
            tables = snapshot.tables_of(raw)
        schema = self.runner.schemas.get(raw)
        if schema is None:
            return None
        columns = {f.name: (str(f.data_type), bool(f.single_value))
                   for f in sorted(schema.fields, key=lambda f: f.name)}  # fmt: skip
        raw_schema = schema.to_json()
        marked = {
            spec.get("name") for key in ("dimensionFieldSpecs", "metricFieldSpecs",
                                         "dateTimeFieldSpecs")
            for spec in raw_schema.get(key) or [] if spec.get("notNull")
        }  # fmt: skip
        column_based = bool(raw_schema.get("enableColumnBasedNullHandling"))
        routes = [snapshot.routes[t] for t in tables]
        partition = next(iter(routes[0].partitioning.items()), None)
        return TableInfo(
            raw, columns,
            partition_column=partition[0] if partition else None,
            partition_function=partition[1].function if partition else None,
            num_partitions=partition[1].num_partitions if partition else 0,
            partition_function_config=tuple(sorted(partition[1].function_config.items()))
            if partition else (),
            is_dim_table=all(r.dim_table for r in routes),
            num_docs=sum(s.num_docs for r in routes for s in r.segments.values()),
            primary_keys=tuple(raw_schema.get("primaryKeyColumns") or ()),
            not_null=frozenset(marked if column_based else columns),
            default_valued=frozenset(marked if column_based else ()),
        )  # fmt: skip

    def _route(self, snapshot, raw: str, request_id: int, exceptions: list,
               everything_on: str | None) -> dict[str, dict[str, list[str]]]:  # fmt: skip
        """{server: {table_TYPE: segments}} for one scan of ``raw``."""
        out: dict[str, dict[str, list[str]]] = {}
        tables = snapshot.tables_of(raw)
        for resource in tables:
            snapshot.check_routable([resource])
            route = snapshot.routes[resource]
            if everything_on is not None:  # a dimension table: all of it, on that server
                out.setdefault(everything_on, {})[resource] = _all_on(route, everything_on)
                continue
            assignment, unavailable, _ = self.runner.route(snapshot, resource, None, request_id)
            for server, segments in assignment.items():
                out.setdefault(server, {})[resource] = sorted(segments)
            if unavailable:
                exceptions.append({
                    "errorCode": SEGMENTS_UNAVAILABLE_ERROR_CODE,
                    "message": f"Found {len(unavailable)} unavailable segments for table "
                               f"{resource}: {unavailable[:10]}",
                })  # fmt: skip
        return out


def segments_by_partition(snapshot, raw: str, column: str):
    """``raw``'s segments by their one partition of ``column``, with their live replicas
    (``engine.multistage.colocation``); (None, why) when a segment has no single partition
    recorded, or recorded it with another function than the table's."""
    out: dict[int, list[tuple[str, str, tuple[str, ...]]]] = {}
    for resource in snapshot.tables_of(raw):
        snapshot.check_routable([resource])
        route = snapshot.routes[resource]
        configured = route.partitioning.get(column)
        function = configured.partition_function() if configured else None
        if function is None:
            return None, f"{resource} is not partitioned on {column}"
        for segment, replicas in route.segment_servers.items():
            info = route.segments.get(segment)
            recorded = info.partitions.get(column) if info else None
            if not recorded or len(recorded) != 1:
                return None, f"segment {segment} does not hold exactly one partition of {column}"
            if info.partition_functions.get(column, function) != function:
                return None, f"segment {segment} was partitioned with another function"
            live = tuple(r for r in replicas if r in snapshot.live)
            out.setdefault(next(iter(recorded)), []).append((resource, segment, live))
    return out, ""


def _all_on(route, server: str) -> list[str]:
    """Every segment of a dimension table, which ``server`` must serve: its workers read the
    table whole (a join's other side), so a part of it would drop rows silently."""
    missing = sorted(s for s, replicas in route.segment_servers.items() if server not in replicas)
    if missing:
        raise QueryExecutionError(
            f"Dimension table {route.table} is not complete on server {server}: it does not "
            f"serve {len(missing)} of its segments ({', '.join(missing[:5])})"
        )
    return sorted(route.segment_servers)


def explain_response(compiled: CompiledQuery, stages, started: float,
                     exchange_stages: dict[int, int]) -> dict:  # fmt: skip
    by_id = {spec.id: spec for spec in stages}

    def placed(exchange) -> tuple[str, str | None] | None:
        spec = by_id.get(exchange_stages.get(id(exchange), -1))
        return (spec.distribution, spec.fallback) if spec is not None else None

    text = compiled.explain(placed)
    if compiled.request.explain == "implementation":
        lines = [text.rstrip("\n"), "Stages:"]
        for spec in stages:
            workers = ", ".join(f"[{spec.id}]@{w.server}|[{w.index}]" for w in spec.workers)
            send = f" -> stage {spec.to_stage} ({spec.distribution})" if spec.to_stage is not None \
                else ""  # fmt: skip
            lines.append(f"  stage {spec.id} {spec.kind}{send}: {workers}")
        text = "\n".join(lines) + "\n"
    return {
        "resultTable": {"dataSchema": {"columnNames": ["SQL", "PLAN"],
                                       "columnDataTypes": ["STRING", "STRING"]},
                        "rows": [[compiled.request.sql, text]]},
        "numRowsResultSet": 1, "exceptions": [], "partialResult": False,
        "timeUsedMs": _ms(started),
    }  # fmt: skip


def _plain(column):
    """Timestamps as epoch ms, as ``column_json`` reads them."""
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.int64())
    return column


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
