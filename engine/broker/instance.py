"""The broker process: registration, routing, and the HTTP API (Pinot's paths)::

POST /query/sql       {"sql", "queryOptions": "k=v;..." | {...}, "trace"}
GET  /query/sql?sql=&queryOptions=&trace=
POST /query, GET /query?sql=   Pinot's multi-stage endpoint (engine.broker.multistage)
POST /multistage/mailbox       rows from the servers' stages for stage 0
GET  /health          200 OK once registered with a routing table; 503 otherwise
GET  /debug/routingTable/{table}     {table_TYPE: {server: [segments]}}
GET  /debug/timeBoundary/{table}     {"timeColumn", "timeValue"} (hybrid tables)
GET  /debug/tables/queryQuota/{table}  this broker's share of the table's quota
GET  /metrics         Prometheus text
GET  /queries         {requestId: sql} of the queries running here
DELETE /query/{id}?client=false&timeoutMs=3000&verbose=false   cancel one (client=true: by
                      its clientQueryId); 200 "Cancelled query: <id>", 404 when not running

Pinot's broker keys come from a properties file (``sprig broker --config``, or
``engine.runtime.properties.load_properties``): ``pinot.broker.enable.query.cancellation``
(default true), the query log's (``engine.broker.query_log``), access control
(``engine.runtime.access``), TLS listeners (``engine.runtime.tls``). With access control on,
queries need credentials (401) and access to their tables (403); the debug endpoints,
``/queries`` and ``DELETE /query`` answer 403 without them. Queries over a quota get 429
(``engine.broker.quotas``).
"""

from __future__ import annotations

import dataclasses
import logging
import socket

import urllib3

from engine.broker.broker_query import BrokerQuery
from engine.broker.errors import (
    BROKER_REQUEST_ERROR_CODE,
    BROKER_RESOURCE_MISSING_ERROR_CODE,
    BadBrokerRequest,
)
from engine.broker.handler import QueryRunner
from engine.broker.metrics import BrokerMetrics
from engine.broker.multistage import MultiStageHandler
from engine.broker.query_log import QueryLogger
from engine.broker.quotas import (
    APPLICATION_NAME_OPTION,
    QUERY_QUOTA_EXCEEDED_ERROR_CODE,
    QueryQuotas,
)
from engine.broker.routes import RoutingSnapshot
from engine.broker.routing import RoutingManager
from engine.broker.running import RunningQueries
from engine.broker.scatter import ScatterGather
from engine.broker.selection import BalancedSelector, ServerHealth
from engine.clusterstate import InstanceConfig, InstanceType, split_table_name
from engine.clusterstate.tags import instance_id as make_instance_id
from engine.query.response import exception_response
from engine.runtime import HttpService, Participant, Request, Response, Router, SchemaCache
from engine.runtime.access import access_control
from engine.runtime.http_limits import HttpLimits
from engine.runtime.outbound import OutboundPolicy
from engine.runtime.properties import PinotProperties
from engine.runtime.tls import HTTPS, Listener, TlsConfig, listeners

log = logging.getLogger(__name__)
# a query's JSON: SQL with long IN lists fits, a data upload does not
QUERY_BODY_BYTES = 16 << 20

QUERY_CANCELLATION_KEY = "pinot.broker.enable.query.cancellation"
HTTP_STATUS_FOR_ERRORS = "pinot-use-http-status-for-errors"  # request header, lower-cased


@dataclasses.dataclass
class BrokerConfig:
    zk_address: str
    cluster_name: str = "PinotCluster"
    host: str = dataclasses.field(default_factory=socket.gethostname)
    port: int = 8099
    bind: str = "0.0.0.0"
    instance_id: str | None = None  # default Broker_<host>_<port>
    tenant_isolation: bool = True
    session_timeout_s: float = 10.0
    resync_interval_s: float = 30.0
    health_probe_interval_s: float = 0.5
    # connections and read deadline of its port (``HttpLimits.from_env`` in ``sprig broker``)
    http: HttpLimits = dataclasses.field(default_factory=HttpLimits)
    # which server addresses written through the REST API it may contact
    # (``OutboundPolicy.from_env`` in ``sprig broker``)
    outbound: OutboundPolicy = dataclasses.field(default_factory=OutboundPolicy)
    # Pinot's broker config (``pinot.broker.*`` keys: access control (engine.runtime.access),
    # TLS, query cancellation, the query log), from ``sprig broker --config FILE``
    properties: PinotProperties = dataclasses.field(default_factory=PinotProperties)

    @property
    def resolved_instance_id(self) -> str:
        return self.instance_id or make_instance_id(InstanceType.BROKER, self.host, self.port)


class BrokerInstance:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.instance_id = config.resolved_instance_id
        self.access = access_control(config.properties, "broker")  # None: everyone may query
        self.quotas = QueryQuotas()
        router = Router()
        # Pinot's pinot.broker.client.access.protocols: http on --port unless it says otherwise,
        # https with pinot.broker.tls.* (engine.runtime.tls); the first one is registered
        self.listeners = [
            HttpService("broker" if listener.protocol != HTTPS else "broker-https",
                        listener.host or config.bind, listener.port, router, config.http,
                        _tls_context(config.properties, listener))
            for listener in listeners(config.properties, CLIENT_PREFIX, config.port)
        ]  # fmt: skip
        self.http_service = self.listeners[0]
        self.metrics = BrokerMetrics()
        self.participant = Participant(
            config.zk_address,
            config.cluster_name,
            InstanceConfig(self.instance_id, config.host, self.http_service.port),
            tenant_isolation=config.tenant_isolation,
            session_timeout_s=config.session_timeout_s,
        )
        self.schemas = SchemaCache(self.participant.store)
        self.routing = RoutingManager(
            self.participant, self.schemas, resync_interval_s=config.resync_interval_s,
            on_change=self._routing_changed, outbound=config.outbound,
        )  # fmt: skip
        self.http = urllib3.PoolManager(num_pools=16, maxsize=4)  # health probes only
        self.health = ServerHealth(self.http, config.health_probe_interval_s)
        self.selector = BalancedSelector(self.health)
        self.scatter = ScatterGather(self.health)
        self.cancellation = config.properties.get_bool(QUERY_CANCELLATION_KEY, True)
        self.running = RunningQueries(self.instance_id, self.http)
        self.runner = QueryRunner(
            self.routing, self.schemas, self.selector, self.scatter, self.metrics,
            running=self.running, broker_id=self.instance_id,
            query_log=QueryLogger(config.properties),
        )  # fmt: skip
        self.multistage = MultiStageHandler(
            self.runner, f"{config.host}:{self.http_service.port}", self.instance_id
        )
        self.runner.multistage = self.multistage
        self.multistage.routes(router)
        router.add("POST", "/query/sql", self._query_post, max_body_bytes=QUERY_BODY_BYTES)
        router.add("GET", "/query/sql", self._query_get)
        router.add("POST", "/query", self._query_post_multistage, max_body_bytes=QUERY_BODY_BYTES)
        router.add("GET", "/query", self._query_get_multistage)
        router.add("GET", "/health", self._health)
        router.add("GET", "/debug/routingTable/{table}", self._routing_table)
        router.add("GET", "/debug/timeBoundary/{table}", self._time_boundary)
        router.add("GET", "/debug/tables/queryQuota/{table}", self._query_quota)
        router.add("GET", "/metrics", self._metrics)
        router.add("GET", "/queries", self._running_queries)
        router.add("DELETE", "/query/{queryId}", self._cancel)

    @property
    def port(self) -> int:
        return self.http_service.port

    def start(self, connect_timeout_s: float = 30.0) -> None:
        for service in self.listeners:
            service.start()
        self.participant.start(connect_timeout_s)
        self.health.start()
        self.routing.start()
        log.info("broker %s on :%d", self.instance_id, self.port)

    def stop(self) -> None:
        self.routing.stop()
        self.health.stop()
        self.participant.stop()
        for service in self.listeners:
            service.stop()
        self.http.clear()

    def healthy(self) -> bool:
        return (
            self.participant.connected
            and self.participant.registered_session is not None
            and self.routing.ready.is_set()
        )

    # --- endpoints -----------------------------------------------------------------------
    def _query_post(self, request: Request) -> Response:
        try:
            query = BrokerQuery.from_json(request.body)
        except BadBrokerRequest as exc:
            return _bad_request(str(exc))
        return self._answer(query, request)

    def _query_get(self, request: Request, multistage: bool = False) -> Response:
        q = request.query
        try:
            query = BrokerQuery.from_fields(q.get("sql"), q.get("queryOptions"), q.get("trace"))
        except BadBrokerRequest as exc:
            return _bad_request(str(exc))
        query.multistage = multistage
        return self._answer(query, request)

    def _query_post_multistage(self, request: Request) -> Response:
        """Pinot's multi-stage endpoint: the multi-stage engine unless the query's own
        ``SET useMultistageEngine=false`` says otherwise."""
        try:
            query = BrokerQuery.from_json(request.body)
        except BadBrokerRequest as exc:
            return _bad_request(str(exc))
        query.multistage = True
        return self._answer(query, request)

    def _query_get_multistage(self, request: Request) -> Response:
        return self._query_get(request, multistage=True)

    def _answer(self, query: BrokerQuery, request: Request) -> Response:
        query.client_ip = request.headers.get("x-forwarded-for")  # the query log's clientIp
        # Until the first routing table is built every table looks missing; a 190 "table does
        # not exist" then would be a wrong answer, so the client is told to retry instead.
        if not self.routing.ready.is_set():
            return _error_response(
                503, BROKER_RESOURCE_MISSING_ERROR_CODE,
                f"broker {self.instance_id} has no routing table yet (starting or reconnecting "
                "to ZooKeeper); retry shortly",
            )  # fmt: skip
        refused = self._admit(query, request)
        if refused is not None:
            return refused
        return Response.json(self.runner.run(query))

    def _admit(self, query: BrokerQuery, request: Request) -> Response | None:
        """Pinot's order: credentials (401) before the query is read; then the application's
        quota, table access (403) and the tables' quotas (429). None admits the query; a query
        that does not parse is left to the runner, which answers its error."""
        if self.access is None and not self.quotas.active:
            return None  # nothing to check: no per-query parse, lookup or lock
        principal = None
        if self.access is not None:
            principal = self.access.principal(request.headers.get("authorization"))
            if principal is None:
                return Response.error(401, "HTTP 401 Unauthorized")
        read = self.runner.tables_of(query)
        if read is None:
            return None
        tables, sql_options = read
        application = sql_options.get(APPLICATION_NAME_OPTION) or query.options.get(
            APPLICATION_NAME_OPTION
        )
        if self.quotas.application_over_quota(application):
            return self._over_quota(query, request, f"application: {application}")
        if principal is not None:
            denied = [t for t in tables if not principal.has_table(t)]
            if denied:
                return _access_denied(denied)
        for table in tables:
            over = self.quotas.table_over_quota(self.runner.routed_tables(table))
            if over is not None:
                return self._over_quota(query, request, f"table: {table}")
        return None

    def _over_quota(self, query: BrokerQuery, request: Request, what: str) -> Response:
        """Pinot's TOO_MANY_REQUESTS (429) in ``exceptions``; HTTP 200 unless the client sent
        ``Pinot-Use-Http-Status-For-Errors: true``."""
        request_id = self.selector.next_request_id()
        message = f"Request {request_id}: {query.sql} exceeds query quota for {what}"
        body = exception_response(QUERY_QUOTA_EXCEEDED_ERROR_CODE, message)
        body["requestId"] = str(request_id)
        status = 200
        if request.headers.get(HTTP_STATUS_FOR_ERRORS, "").strip().lower() == "true":
            status = QUERY_QUOTA_EXCEEDED_ERROR_CODE
        return Response.json(body, status)

    def _routing_changed(self, snapshot: RoutingSnapshot) -> None:
        if snapshot.quotas is not None:
            self.quotas.update(snapshot.quotas)

    def _health(self, _request: Request) -> Response:
        if self.healthy():
            return Response.text("OK")
        return Response.text("NOT_READY: not registered or no routing table yet", 503)

    def _debug_refusal(self, request: Request) -> Response | None:
        """Pinot's broker filter for its other endpoints: a 403 naming the URL (for an
        endpoint of one table, also without access to the table)."""
        if self.access is None:
            return None
        principal = self.access.principal(request.headers.get("authorization"))
        table = request.params.get("table")
        if principal is None:
            reason = "no or wrong credentials"
        elif table is not None and not principal.has_table(table):
            reason = f"no access to table {table}"
        else:
            return None
        return Response.error(403, f"Failed access check for {request.path}.Reason: {reason}")

    def _query_quota(self, request: Request) -> Response:
        """This broker's share of a table's quota (queries per second), per table type."""
        refused = self._debug_refusal(request)
        if refused is not None:
            return refused
        table = request.params["table"]
        rates = {t: self.quotas.table_rate(t) for t in self.runner.routed_tables(table)}
        rates = {t: rate for t, rate in rates.items() if rate is not None}
        if not rates:
            return Response.error(404, f"No query quota for table: {table}")
        return Response.json(rates)

    def _routing_table(self, request: Request) -> Response:
        refused = self._debug_refusal(request)
        if refused is not None:
            return refused
        table = request.params["table"]
        snapshot = self.routing.snapshot
        raw, table_type = split_table_name(table)
        tables = [table] if table_type else snapshot.tables_of(raw)
        if not tables or any(t not in snapshot.routes for t in tables):
            return Response.error(404, f"No routing table for table: {table}")
        request_id = self.selector.next_request_id()
        out = {}
        for resource in tables:
            assignment, _, _ = self.runner.route(snapshot, resource, None, request_id)
            out[resource] = {server: sorted(segs) for server, segs in sorted(assignment.items())}
        return Response.json(out)

    def _time_boundary(self, request: Request) -> Response:
        refused = self._debug_refusal(request)
        if refused is not None:
            return refused
        raw = split_table_name(request.params["table"])[0]
        boundary = self.runner.time_boundary(self.routing.snapshot, raw)
        if boundary is None:
            return Response.error(404, f"No time boundary for table: {raw} (not a hybrid table)")
        return Response.json(boundary.to_json())

    def _metrics(self, _request: Request) -> Response:
        return self.metrics.response()

    def _running_queries(self, request: Request) -> Response:
        refused = self._debug_refusal(request)  # the listing shows every caller's SQL
        if refused is not None:
            return refused
        if not self.cancellation:
            return _cancellation_disabled()
        return Response.json(self.running.listing())

    def _cancel(self, request: Request) -> Response:
        """Pinot's ``DELETE /query/{id}``: tell the query's servers to stop, answer at once."""
        refused = self._debug_refusal(request)
        if refused is not None:
            return refused
        if not self.cancellation:
            return _cancellation_disabled()
        query_id = request.params["queryId"]
        client = request.query.get("client", "false").lower() == "true"
        timeout = request.query.get("timeoutMs", "3000")
        if not timeout.isdigit():
            return Response.error(400, f"Invalid timeoutMs: {timeout} (milliseconds)")
        try:
            running = self.running.find(query_id, client=client)
        except ValueError:
            return Response.error(400, f"Invalid internal query id: {query_id}")
        if running is None:
            return Response.error(404, f"Query: {query_id} not found on the broker")
        credentials = request.headers.get("authorization")  # the servers check them too
        statuses = self.running.cancel(running, int(timeout) / 1000.0,
                                       {"Authorization": credentials} if credentials else None)  # fmt: skip
        text = f"Cancelled query: {running.request_id}"
        if request.query.get("verbose", "false").lower() == "true":
            shown = ", ".join(f"{server}={status}" for server, status in sorted(statuses.items()))
            text += f" with responses from servers: {{{shown}}}"
        return Response.text(text)


def _cancellation_disabled() -> Response:
    return Response.error(
        500, f"Query cancellation is not enabled on broker ({QUERY_CANCELLATION_KEY}=false)"
    )


CLIENT_PREFIX = "pinot.broker.client"
TLS_PREFIX = "pinot.broker.tls"


def _tls_context(properties: PinotProperties, listener: Listener):
    if listener.protocol != HTTPS:
        return None
    return TlsConfig.from_properties(properties, TLS_PREFIX).server_context()


def _access_denied(tables: list[str]) -> Response:
    return Response.error(
        403, f"Permission denied.Reason: Authorization Failed for tables: [{', '.join(tables)}]"
    )


def _bad_request(message: str) -> Response:
    return _error_response(400, BROKER_REQUEST_ERROR_CODE, message)


def _error_response(status: int, error_code: int, message: str) -> Response:
    return Response.json(exception_response(error_code, message), status)
