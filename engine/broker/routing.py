"""Routing tables built from ZooKeeper and kept current by watches.

For every table (with type) the broker keeps which servers serve each segment (the ONLINE
and CONSUMING replicas in the external view), what it knows of each segment for pruning
(time range, partitions, from ``PROPERTYSTORE/SEGMENTS``), and the table's time column and
partitioning (from its table config and schema). Server addresses come from the instance
configs; liveness from ``LIVEINSTANCES``.

One thread rebuilds the snapshot whenever a watch fires (and every ``resync_interval_s``);
readers take ``snapshot`` and never lock. Segment metadata is cached and re-read only when
its znode changes.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

import orjson
from kazoo.exceptions import KazooException, NoNodeError

from engine.broker.pruning import ColumnPartitioning, SegmentInfo
from engine.clusterstate import (
    SERVING_STATES,
    ClusterStateError,
    InstanceConfig,
    InstanceType,
    ResourceAssignment,
    SegmentZKMetadata,
    ZNRecord,
    ZooKeeperUnavailableError,
    split_table_name,
    table_config_from_record,
)
from engine.common.errors import ConfigError
from engine.server.participant import Participant
from engine.server.schemas import SchemaCache
from engine.spi.datetime_format import UNIT_MILLIS, DateTimeFormat

log = logging.getLogger(__name__)

HOUR_MS = 3_600_000
DAY_MS = 86_400_000


@dataclasses.dataclass(frozen=True)
class ServerAddress:
    instance_id: str
    host: str
    port: int
    admin_port: int = -1

    @property
    def query_url(self) -> str:
        return f"http://{self.host}:{self.port}/query"

    @property
    def health_url(self) -> str:
        port = self.admin_port if self.admin_port > 0 else self.port
        return f"http://{self.host}:{port}/health"


@dataclasses.dataclass(frozen=True)
class TableRoute:
    table: str  # with type
    segment_servers: dict[str, tuple[str, ...]]  # segment -> serving replicas (sorted)
    segments: dict[str, SegmentInfo]
    time_column: str | None = None
    time_format: DateTimeFormat | None = None
    partitioning: dict[str, ColumnPartitioning] = dataclasses.field(default_factory=dict)
    push_frequency_ms: int = DAY_MS

    @property
    def time_unit_ms(self) -> float | None:
        """Milliseconds per unit of the time column's values, when they are epoch numbers."""
        if self.time_format is None or self.time_format.kind == "SIMPLE_DATE_FORMAT":
            return None
        return self.time_format.unit_millis


@dataclasses.dataclass(frozen=True)
class RoutingSnapshot:
    routes: dict[str, TableRoute]
    servers: dict[str, ServerAddress]
    live: frozenset[str]
    version: int = 0

    def tables_of(self, raw_table: str) -> list[str]:
        return [t for t in (f"{raw_table}_OFFLINE", f"{raw_table}_REALTIME") if t in self.routes]


class RoutingManager:
    def __init__(
        self,
        participant: Participant,
        schemas: SchemaCache,
        *,
        resync_interval_s: float = 30.0,
        on_change=None,
    ) -> None:
        self.participant = participant
        self.schemas = schemas
        self.resync_interval_s = resync_interval_s
        self.snapshot = RoutingSnapshot({}, {}, frozenset())
        self._segment_cache: dict[tuple[str, str], SegmentInfo | None] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_change = on_change
        self.ready = threading.Event()

    @property
    def changed(self) -> threading.Event:
        return self.participant.changed

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="routing", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.changed.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _poke(self, _event=None) -> None:
        self.changed.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.changed.wait(self.resync_interval_s)
            if self._stop.is_set():
                return
            self.changed.clear()
            try:
                if not self.participant.connected:
                    raise ZooKeeperUnavailableError("not connected")
                self.participant.ensure_registered()
                self.refresh()
                self.ready.set()
                if self._on_change is not None:
                    self._on_change(self.snapshot)
            except (ZooKeeperUnavailableError, KazooException) as exc:
                # keep routing on the last snapshot until ZooKeeper is back
                log.warning("ZooKeeper unavailable (%s); keeping the last routing table", exc)
                self._stop.wait(0.5)
                self.changed.set()
            except Exception:  # a bug in one pass must not stop routing updates
                log.exception("routing refresh failed; retrying")
                self._stop.wait(1.0)
                self.changed.set()

    # --- one rebuild -------------------------------------------------------------------------
    def refresh(self) -> RoutingSnapshot:
        paths = self.participant.store.paths
        live = frozenset(self._children(paths.live_instances))
        servers = {}
        for instance_id in self._children(paths.participants):
            if InstanceType.of_instance(instance_id) is not InstanceType.SERVER:
                continue
            record = self._record(paths.instance_config(instance_id))
            if record is not None:
                config = InstanceConfig.from_record(record)
                if config.enabled:
                    servers[instance_id] = ServerAddress(
                        instance_id, config.host, config.port, config.admin_port
                    )
        tables = set(self._children(paths.external_views)) | set(
            self._children(paths.table_configs)
        )
        routes = {}
        for table in sorted(tables):
            if split_table_name(table)[1] is None:
                continue  # brokerResource and other non-table resources
            route = self._build_route(table)
            if route is not None:
                routes[table] = route
        known = set(routes)
        for key in [k for k in self._segment_cache if k[0] not in known]:
            self._segment_cache.pop(key, None)
        self.snapshot = RoutingSnapshot(routes, servers, live, self.snapshot.version + 1)
        return self.snapshot

    def _build_route(self, table: str) -> TableRoute | None:
        paths = self.participant.store.paths
        config_record = self._record(paths.table_config(table))
        view_record = self._record(paths.external_view(table))
        if config_record is None and view_record is None:
            return None
        config = {}
        if config_record is not None:
            try:
                config = table_config_from_record(config_record)
            except ClusterStateError as exc:
                log.error("table config %s is unreadable: %s", table, exc)
        view = ResourceAssignment.from_record(view_record) if view_record else None
        segment_servers = {}
        for segment, replicas in (view.segments if view else {}).items():
            serving = tuple(sorted(i for i, s in replicas.items() if s in SERVING_STATES))
            segment_servers[segment] = serving
        segments = {}
        for segment in segment_servers:
            info = self._segment_info(table, segment, config)
            segments[segment] = info
        time_column, time_format = self._time_column(table, config)
        return TableRoute(
            table=table,
            segment_servers=segment_servers,
            segments=segments,
            time_column=time_column,
            time_format=time_format,
            partitioning=_partitioning(config),
            push_frequency_ms=_push_frequency_ms(config),
        )

    def _time_column(self, table: str, config: dict) -> tuple[str | None, DateTimeFormat | None]:
        column = (config.get("segmentsConfig") or {}).get("timeColumnName")
        schema = self.schemas.get(split_table_name(table)[0])
        if schema is None:
            return column, None
        column = column or schema.time_column_name
        if not column or not schema.has_column(column):
            return column, None
        try:
            return column, schema.field(column).datetime_format
        except ConfigError:
            return column, None

    def _segment_info(self, table: str, segment: str, config: dict) -> SegmentInfo:
        key = (table, segment)
        if key in self._segment_cache and self._segment_cache[key] is not None:
            return self._segment_cache[key]
        path = self.participant.store.paths.segment(table, segment)
        record = self._record(path, watch=lambda _e, k=key: self._stale_segment(k))
        info = SegmentInfo(segment)
        if record is not None:
            info = segment_info_from_metadata(SegmentZKMetadata.from_record(record, table))
        self._segment_cache[key] = info
        return info

    def _stale_segment(self, key: tuple[str, str]) -> None:
        self._segment_cache.pop(key, None)
        self.changed.set()

    def _children(self, path: str) -> list[str]:
        try:
            return self.participant.client.get_children(path, watch=self._poke)
        except NoNodeError:
            return []

    def _record(self, path: str, watch=None) -> ZNRecord | None:
        try:
            data, _ = self.participant.client.get(path, watch=watch or self._poke)
        except NoNodeError:
            return None
        if not data:
            return None
        try:
            return ZNRecord.from_bytes(data, where=path)
        except ClusterStateError as exc:
            log.error("ignoring a malformed znode: %s", exc)
            return None


def segment_info_from_metadata(meta: SegmentZKMetadata) -> SegmentInfo:
    """Time range in epoch ms (from ``segment.start/end.time`` in ``segment.time.unit``) and
    partitions (from Pinot's ``segment.partition.metadata`` JSON)."""
    start = end = None
    unit_ms = UNIT_MILLIS.get((meta.time_unit or "").upper())
    if unit_ms and meta.start_time is not None and meta.end_time is not None:
        start, end = meta.start_time * unit_ms, meta.end_time * unit_ms
    partitions = {}
    raw = meta.extra.get("segment.partition.metadata")
    if raw:
        try:
            column_map = orjson.loads(raw).get("columnPartitionMap") or {}
            for column, spec in column_map.items():
                partitions[column] = frozenset(int(p) for p in spec.get("partitions") or [])
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            log.warning("segment %s: unreadable segment.partition.metadata", meta.segment_name)
    return SegmentInfo(meta.segment_name, start, end, partitions)


def _partitioning(config: dict) -> dict[str, ColumnPartitioning]:
    index = config.get("tableIndexConfig") or {}
    column_map = (index.get("segmentPartitionConfig") or {}).get("columnPartitionMap") or {}
    out = {}
    for column, spec in column_map.items():
        try:
            out[column] = ColumnPartitioning(str(spec["functionName"]), int(spec["numPartitions"]))
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring the malformed partition config of column %s", column)
    return out


def _push_frequency_ms(config: dict) -> int:
    """One push-frequency unit: an hour for HOURLY pushes, else a day."""
    batch = (config.get("ingestionConfig") or {}).get("batchIngestionConfig") or {}
    frequency = batch.get("segmentIngestionFrequency") or (config.get("segmentsConfig") or {}).get(
        "segmentPushFrequency"
    )
    return HOUR_MS if str(frequency or "").upper() == "HOURLY" else DAY_MS
