"""The server process: registration, the ideal-state follower, and the query and admin ports.

Admin endpoints (``--admin-port``)::

    GET /health                  200 OK once registered and following; 503 otherwise
    GET /segments                every hosted segment: state, CRC, docs, ERROR reason
    GET /tables                  {"tables": [table_TYPE, ...]}
    GET /tables/{t}/segments     the segments of one table (with or without type)
    GET /tables/{t}/consumingSegmentsInfo   SegmentConsumerInfo of its consuming segments
    GET /tables/{t}/segments/needReload     {"instanceId", "needReload"}: a segment lacks a
                                 column of the current schema (a reload would write it)
    GET /metrics                 Prometheus text: queries, latency, docs scanned, segments
    upsert tables: validDocIdsMetadata, validDocIdsBitmap, primaryKeyCount, table metadata
                                 (see ``engine.server.upsert_api``)
    DELETE /query/{queryId}      cancel a running query (<brokerId>_<requestId>[_O|_R])

With Pinot's ``pinot.server.admin.access.control.*`` keys every admin endpoint but /health and
/metrics needs a principal that may read the path's table (or holds ADMIN where none is
named; ``_guarded``).

Query endpoint (``--query-port``): ``POST /query`` (see ``engine.server.query``), and the
multi-stage engine's ``/multistage/*`` (see ``engine.server.multistage``).
"""

from __future__ import annotations

import dataclasses
import logging
import socket
from pathlib import Path

from engine.clusterstate import InstanceConfig, InstanceType, split_table_name
from engine.clusterstate.tags import instance_id as make_instance_id
from engine.query.runner import QueryEngine
from engine.query.settings import QuerySettings
from engine.realtime.stall import DEFAULT_STALL_S
from engine.runtime import HttpService, Participant, Request, Response, Router, SchemaCache
from engine.runtime.access import SERVER_ADMIN, AccessType, access_control
from engine.runtime.http_limits import MAX_BODY_BYTES, HttpLimits
from engine.runtime.outbound import OutboundPolicy
from engine.runtime.properties import PinotProperties
from engine.runtime.service_auth import SERVER_FETCHER, SERVER_UPLOADER, auth_headers
from engine.segment.tarball import DEFAULT_MAX_UNPACKED_BYTES
from engine.server.download import SegmentSources, registered_controllers
from engine.server.drain import DEFAULT_DRAIN_S
from engine.server.follower import IdealStateFollower
from engine.server.metrics import ServerMetrics
from engine.server.multistage import MultiStageService
from engine.server.query import QueryExecutor
from engine.server.realtime import RealtimeSegmentManager
from engine.server.segments import SegmentDataManager
from engine.server.upsert_api import UpsertEndpoints
from engine.server.upsert_tables import UpsertTables
from engine.spi.table_name import REALTIME, TABLE_TYPES, table_name_with_type

log = logging.getLogger(__name__)

UPLOADER_PREFIX = "pinot.server.segment.uploader"


@dataclasses.dataclass
class ServerConfig:
    zk_address: str
    cluster_name: str = "PinotCluster"
    host: str = dataclasses.field(default_factory=socket.gethostname)
    query_port: int = 8098
    admin_port: int = 8097
    bind: str = "0.0.0.0"
    instance_id: str | None = None  # default Server_<host>_<query_port>
    data_dir: Path = Path("var/server")
    tenant_isolation: bool = True
    session_timeout_s: float = 10.0
    resync_interval_s: float = 10.0
    # seconds a segment taken away keeps serving (``drain_seconds_from_env`` in ``sprig server``)
    drop_drain_s: float = DEFAULT_DRAIN_S
    # the most one downloaded segment may unpack to (``max_unpacked_bytes_from_env``)
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
    # connections and read deadline of both ports (``HttpLimits.from_env`` in ``sprig server``)
    http: HttpLimits = dataclasses.field(default_factory=HttpLimits)
    # no progress for this long while the partition grows: stalled (``stall_seconds_from_env``)
    realtime_stall_s: float = DEFAULT_STALL_S
    # read once at start-up (``QuerySettings.from_env`` in ``sprig server``)
    query: QuerySettings = dataclasses.field(default_factory=QuerySettings)
    # which hosts besides the controllers' own it downloads segments from
    # (``OutboundPolicy.from_env`` in ``sprig server``)
    outbound: OutboundPolicy = dataclasses.field(default_factory=OutboundPolicy)
    # Pinot's pinot.server.* keys: the admin API's access control, service credentials
    properties: PinotProperties = dataclasses.field(default_factory=PinotProperties)

    @property
    def resolved_instance_id(self) -> str:
        return self.instance_id or make_instance_id(InstanceType.SERVER, self.host, self.query_port)


class ServerInstance:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.instance_id = config.resolved_instance_id
        props = config.properties
        self.admin_access = access_control(props, "server")  # None: the admin API is open
        # bind both ports first: a port in use fails here, before anything is registered
        self.metrics = ServerMetrics()
        self.query_engine = QueryEngine(config.query)  # plan and column caches, segment pool
        query_router, admin_router = Router(), Router()
        self.query_http = HttpService(
            "query", config.bind, config.query_port, query_router, config.http
        )
        self.admin_http = HttpService(
            "admin", config.bind, config.admin_port, admin_router, config.http
        )
        self.participant = Participant(
            config.zk_address,
            config.cluster_name,
            InstanceConfig(
                instance_id=self.instance_id,
                host=config.host,
                port=self.query_http.port,
                admin_port=self.admin_http.port,
            ),
            tenant_isolation=config.tenant_isolation,
            session_timeout_s=config.session_timeout_s,
        )
        self.schemas = SchemaCache(self.participant.store)
        self.segments = SegmentDataManager(
            self.instance_id,
            Path(config.data_dir),
            lambda: self.participant.store,
            self.participant.session_id,
            on_unload=self.query_engine.forget_segment,
            drain_s=config.drop_drain_s,
            max_unpacked_bytes=config.max_unpacked_bytes,
            sources=SegmentSources(
                config.outbound, registered_controllers(lambda: self.participant.store)
            ),
            wake=lambda: self.follower.poke(),
            schemas=self.schemas,
            download_headers=auth_headers(props, SERVER_FETCHER),
        )
        self.follower = IdealStateFollower(
            self.participant, self.segments, resync_interval_s=config.resync_interval_s
        )
        self.segments.realtime = RealtimeSegmentManager(
            self.instance_id, Path(config.data_dir), lambda: self.participant.store,
            self.schemas.get, stall_s=config.realtime_stall_s,
            completion_headers=auth_headers(props, SERVER_UPLOADER),
            controller_scheme=props.get(f"{UPLOADER_PREFIX}.protocol", "") or "http",
        )  # fmt: skip
        self.upsert = UpsertTables(Path(config.data_dir), lambda: self.participant.store,
                                   self.schemas.get)  # fmt: skip
        self.segments.upsert = self.segments.realtime.upsert = self.upsert
        self.executor = QueryExecutor(
            self.instance_id, self.segments, self.schemas, self.metrics, self.query_engine
        )
        self.metrics.document_counts(self.segments.document_counts)
        # a broker's request names the segments to query: thousands of names for a big table
        query_router.add("POST", "/query", self.executor.handle, max_body_bytes=MAX_BODY_BYTES)
        self.multistage = MultiStageService(
            self.instance_id, f"{config.host}:{self.query_http.port}", self.segments,
            self.schemas, self.query_engine,
        )  # fmt: skip
        self.multistage.routes(query_router)
        query_router.add("GET", "/health", self._health)
        admin_router.add("GET", "/health", self._health)
        admin_router.add("GET", "/segments", self._guarded(self._segments))
        admin_router.add("GET", "/tables", self._guarded(self._tables))
        admin_router.add("GET", "/tables/{table}/segments", self._guarded(self._table_segments))
        admin_router.add(
            "GET", "/tables/{table}/consumingSegmentsInfo", self._guarded(self._consuming_info)
        )
        admin_router.add(
            "GET", "/tables/{table}/segments/needReload", self._guarded(self._need_reload)
        )
        admin_router.add("GET", "/metrics", self._metrics)
        UpsertEndpoints(self.instance_id, self.upsert).routes(admin_router, self._guarded)
        admin_router.add("DELETE", "/query/{queryId}", self._guarded(self.executor.cancel))

    def start(self, connect_timeout_s: float = 30.0) -> None:
        self.query_http.start()
        self.admin_http.start()
        self.participant.start(connect_timeout_s)
        self.follower.start()
        log.info("server %s: queries on :%d, admin on :%d, data in %s", self.instance_id,
                 self.query_http.port, self.admin_http.port, self.config.data_dir)  # fmt: skip

    def stop(self) -> None:
        self.follower.stop()
        self.participant.stop()
        self.query_http.stop()
        self.admin_http.stop()
        self.segments.unload_all()
        self.query_engine.close()

    # --- admin ---------------------------------------------------------------------------
    def _guarded(self, handler):
        """``handler`` behind the admin API's access control (Pinot's server admin filter): a
        principal that may read the path's table, or that holds ADMIN where none is named;
        else 403 ``Forbidden``. /health and /metrics stay open for probes and scrapers."""
        access = self.admin_access
        if access is None:
            return handler

        def guarded(request: Request) -> Response:
            principal = access.principal(request.headers.get("authorization"))
            table = request.params.get("table")
            allowed = principal is not None and (
                principal.allows(AccessType.READ, table)
                if table
                else principal.allows(SERVER_ADMIN)
            )
            return handler(request) if allowed else Response.text("Forbidden", 403)

        return guarded

    def healthy(self) -> bool:
        return (
            self.participant.connected
            and self.participant.registered_session is not None
            and self.follower.passes > 0
        )

    def _health(self, _request: Request) -> Response:
        if self.healthy():
            return Response.text("OK")
        return Response.text("NOT_READY: not registered in ZooKeeper yet", 503)

    def _segments(self, _request: Request) -> Response:
        return Response.json({"instanceId": self.instance_id, "tables": self.segments.describe()})

    def _tables(self, _request: Request) -> Response:
        return Response.json({"tables": sorted(self.segments.describe())})

    def _table_segments(self, request: Request) -> Response:
        table = request.params["table"]
        described = self.segments.describe()
        raw, table_type = split_table_name(table)
        names = [table] if table_type else [table_name_with_type(raw, t) for t in TABLE_TYPES]
        found = {n: described[n] for n in names if n in described}
        if not found:
            return Response.error(404, f"table {table} has no segments on {self.instance_id}")
        return Response.json(found)

    def _consuming_info(self, request: Request) -> Response:
        """Pinot's server-side list of SegmentConsumerInfo for one REALTIME table."""
        raw, _ = split_table_name(request.params["table"])
        return Response.json(
            self.segments.realtime.consuming_info(table_name_with_type(raw, REALTIME))
        )

    def _need_reload(self, request: Request) -> Response:
        """Pinot's server answer: whether a segment here lacks a column of the schema."""
        table = request.params["table"]
        raw, table_type = split_table_name(table)
        names = [table] if table_type else [table_name_with_type(raw, t) for t in TABLE_TYPES]
        need = any(self.segments.need_reload(name) for name in names)
        return Response.json({"instanceId": self.instance_id, "needReload": need})

    def _metrics(self, _request: Request) -> Response:
        self.metrics.segments.clear()
        for state, count in self.segments.count_by_state().items():
            self.metrics.segments.labels(state).set(count)
        self.metrics.observe_ingestion(self.segments.realtime.ingestion_totals())
        return self.metrics.response()
