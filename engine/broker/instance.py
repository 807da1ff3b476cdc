"""The broker process: registration, routing, and the HTTP API (Pinot's paths)::

POST /query/sql       {"sql", "queryOptions": "k=v;..." | {...}, "trace"}
GET  /query/sql?sql=&queryOptions=&trace=
POST /query, GET /query?sql=   Pinot's multi-stage endpoint (engine.broker.multistage)
POST /multistage/mailbox       rows from the servers' stages for stage 0
GET  /health          200 OK once registered with a routing table; 503 otherwise
GET  /debug/routingTable/{table}     {table_TYPE: {server: [segments]}}
GET  /debug/timeBoundary/{table}     {"timeColumn", "timeValue"} (hybrid tables)
GET  /metrics         Prometheus text
GET  /queries         {requestId: sql} of the queries running here
DELETE /query/{id}?client=false&timeoutMs=3000&verbose=false   cancel one (client=true: by
                      its clientQueryId); 200 "Cancelled query: <id>", 404 when not running

Pinot's broker keys come from a properties file (``sprig broker --config``):
``pinot.broker.enable.query.cancellation`` (default true) and the query log's
(``engine.broker.query_log``).
"""

from __future__ import annotations

import dataclasses
import logging
import socket

import urllib3

from engine.broker.errors import (
    BROKER_REQUEST_ERROR_CODE,
    BROKER_RESOURCE_MISSING_ERROR_CODE,
    BadBrokerRequest,
)
from engine.broker.handler import BrokerQuery, QueryRunner
from engine.broker.metrics import BrokerMetrics
from engine.broker.multistage import MultiStageHandler
from engine.broker.query_log import QueryLogger
from engine.broker.routing import RoutingManager
from engine.broker.running import RunningQueries
from engine.broker.scatter import ScatterGather
from engine.broker.selection import BalancedSelector, ServerHealth
from engine.clusterstate import InstanceConfig, InstanceType, split_table_name
from engine.clusterstate.tags import instance_id as make_instance_id
from engine.query.response import exception_response
from engine.runtime import HttpService, Participant, Request, Response, Router, SchemaCache
from engine.runtime.http_limits import HttpLimits
from engine.runtime.properties import PinotProperties

log = logging.getLogger(__name__)
# a query's JSON: SQL with long IN lists fits, a data upload does not
QUERY_BODY_BYTES = 16 << 20

QUERY_CANCELLATION_KEY = "pinot.broker.enable.query.cancellation"


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
    # Pinot's broker config (``pinot.broker.*`` keys), from ``sprig broker --config FILE``
    properties: PinotProperties = dataclasses.field(default_factory=PinotProperties)

    @property
    def resolved_instance_id(self) -> str:
        return self.instance_id or make_instance_id(InstanceType.BROKER, self.host, self.port)


class BrokerInstance:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.instance_id = config.resolved_instance_id
        router = Router()
        self.http_service = HttpService("broker", config.bind, config.port, router, config.http)
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
            self.participant, self.schemas, resync_interval_s=config.resync_interval_s
        )
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
        router.add("GET", "/metrics", self._metrics)
        router.add("GET", "/queries", self._running_queries)
        router.add("DELETE", "/query/{queryId}", self._cancel)

    @property
    def port(self) -> int:
        return self.http_service.port

    def start(self, connect_timeout_s: float = 30.0) -> None:
        self.http_service.start()
        self.participant.start(connect_timeout_s)
        self.health.start()
        self.routing.start()
        log.info("broker %s on :%d", self.instance_id, self.port)

    def stop(self) -> None:
        self.routing.stop()
        self.health.stop()
        self.participant.stop()
        self.http_service.stop()
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
        query.client_ip = request.headers.get("x-forwarded-for")
        return self._answer(query)

    def _query_get(self, request: Request, multistage: bool = False) -> Response:
        q = request.query
        try:
            query = BrokerQuery.from_fields(q.get("sql"), q.get("queryOptions"), q.get("trace"))
        except BadBrokerRequest as exc:
            return _bad_request(str(exc))
        query.multistage = multistage
        query.client_ip = request.headers.get("x-forwarded-for")
        return self._answer(query)

    def _query_post_multistage(self, request: Request) -> Response:
        """Pinot's multi-stage endpoint: the multi-stage engine unless the query's own
        ``SET useMultistageEngine=false`` says otherwise."""
        try:
            query = BrokerQuery.from_json(request.body)
        except BadBrokerRequest as exc:
            return _bad_request(str(exc))
        query.multistage = True
        return self._answer(query)

    def _query_get_multistage(self, request: Request) -> Response:
        return self._query_get(request, multistage=True)

    def _answer(self, query: BrokerQuery) -> Response:
        # Until the first routing table is built every table looks missing; a 190 "table does
        # not exist" then would be a wrong answer, so the client is told to retry instead.
        if not self.routing.ready.is_set():
            return _error_response(
                503, BROKER_RESOURCE_MISSING_ERROR_CODE,
                f"broker {self.instance_id} has no routing table yet (starting or reconnecting "
                "to ZooKeeper); retry shortly",
            )  # fmt: skip
        return Response.json(self.runner.run(query))

    def _health(self, _request: Request) -> Response:
        if self.healthy():
            return Response.text("OK")
        return Response.text("NOT_READY: not registered or no routing table yet", 503)

    def _routing_table(self, request: Request) -> Response:
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
        raw = split_table_name(request.params["table"])[0]
        boundary = self.runner.time_boundary(self.routing.snapshot, raw)
        if boundary is None:
            return Response.error(404, f"No time boundary for table: {raw} (not a hybrid table)")
        return Response.json(boundary.to_json())

    def _metrics(self, _request: Request) -> Response:
        return self.metrics.response()

    def _running_queries(self, _request: Request) -> Response:
        if not self.cancellation:
            return _cancellation_disabled()
        return Response.json(self.running.listing())

    def _cancel(self, request: Request) -> Response:
        """Pinot's ``DELETE /query/{id}``: tell the query's servers to stop, answer at once."""
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
        statuses = self.running.cancel(running, int(timeout) / 1000.0)
        text = f"Cancelled query: {running.request_id}"
        if request.query.get("verbose", "false").lower() == "true":
            shown = ", ".join(f"{server}={status}" for server, status in sorted(statuses.items()))
            text += f" with responses from servers: {{{shown}}}"
        return Response.text(text)


def _cancellation_disabled() -> Response:
    return Response.error(
        500, f"Query cancellation is not enabled on broker ({QUERY_CANCELLATION_KEY}=false)"
    )


def _bad_request(message: str) -> Response:
    return _error_response(400, BROKER_REQUEST_ERROR_CODE, message)


def _error_response(status: int, error_code: int, message: str) -> Response:
    return Response.json(exception_response(error_code, message), status)
