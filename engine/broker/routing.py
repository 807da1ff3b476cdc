"""Routing tables built from ZooKeeper and kept current by watches.

For every table (with type) the broker keeps which servers serve each segment (the ONLINE
and CONSUMING replicas in the external view), what it knows of each segment for pruning
(time range, partitions, from ``PROPERTYSTORE/SEGMENTS``), and the table's time column and
partitioning (from its table config and schema). Server addresses come from the instance
configs; liveness from ``LIVEINSTANCES``. Only a lineage-consistent set of segments is
routed (``PROPERTYSTORE/SEGMENT_LINEAGE``, ``engine.clusterstate.lineage``): while segments
are being replaced, a query sees either the old ones or the new ones, never both. The view
and the lineage of a route are read as they were at one instant (``_consistent_read``).
A table whose lineage cannot be read keeps its last route; without one it is not routed at all
(``TableRoute.unroutable``; queries get a 410 error naming it) until the lineage is readable,
because without the lineage inputs and outputs of a replacement would be counted together.

One thread (an ``engine.runtime.Membership`` loop, which also keeps the broker registered)
rebuilds the snapshot whenever a watch fires (and every ``resync_interval_s``); readers take
``snapshot`` and never lock. Table configs are read through ``engine.spi.TableConfig``. Segment metadata is cached and re-read only when
its znode changes.
"""

from __future__ import annotations

import logging
import threading

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from engine.broker.pruning import (
    ColumnPartitioning,
    SegmentInfo,
    table_partitioning,
)
from engine.broker.quotas import RATE_LIMIT_DISABLED_KEY, QuotaInputs, parse_qps, quota_inputs
from engine.broker.routes import (
    DAY_MS,
    RoutingSnapshot,
    ServerAddress,
    TableRoute,
    segment_info_from_metadata,
)
from engine.clusterstate import (
    SERVING_STATES,
    ClusterStateError,
    InstanceConfig,
    InstanceType,
    ResourceAssignment,
    SegmentLineage,
    SegmentZKMetadata,
    ZNRecord,
    lineage_consistent_segments,
    split_table_name,
    table_config_from_record,
)
from engine.clusterstate.tags import DEFAULT_TENANT, broker_tag
from engine.common.errors import ConfigError
from engine.runtime import Membership, Participant, SchemaCache
from engine.runtime.outbound import OutboundPolicy, OutboundRefused
from engine.spi import TableConfig
from engine.spi.datetime_format import DateTimeFormat

log = logging.getLogger(__name__)

# reads of the lineage around the external view before settling for the last route
CONSISTENT_READ_ATTEMPTS = 3


class RoutingManager(Membership):
    """Keeps the broker registered and ``snapshot`` current (``ready`` once built)."""

    while_unavailable = "keeping the last routing table"

    def __init__(
        self,
        participant: Participant,
        schemas: SchemaCache,
        *,
        resync_interval_s: float = 30.0,
        on_change=None,
        outbound: OutboundPolicy = OutboundPolicy(),  # noqa: B008 (frozen)
    ) -> None:
        super().__init__(participant, "routing", interval_s=resync_interval_s)
        self.schemas = schemas
        self.outbound = outbound  # for server addresses written through the REST API
        self.snapshot = RoutingSnapshot({}, {}, frozenset())
        # (table, segment) -> info; dropped by the segment's watch, on kazoo's event thread
        self._segment_cache: dict[tuple[str, str], SegmentInfo] = {}
        self._segment_reads: dict[tuple[str, str], object] = {}  # reads in progress
        self._segment_lock = threading.Lock()
        self._on_change = on_change

    def follow(self) -> None:
        self.refresh()
        if self._on_change is not None:
            self._on_change(self.snapshot)

    # --- one rebuild -------------------------------------------------------------------------
    def refresh(self) -> RoutingSnapshot:
        paths = self.participant.store.paths
        live = frozenset(self._children(paths.live_instances))
        servers, brokers, quotas_disabled = {}, {}, False
        for instance_id in self._children(paths.participants):
            kind = InstanceType.of_instance(instance_id)
            if kind not in (InstanceType.SERVER, InstanceType.BROKER):
                continue
            record = self._record(paths.instance_config(instance_id))
            if record is None:
                continue
            config = InstanceConfig.from_record(record)
            if kind is InstanceType.BROKER:
                if config.enabled and instance_id in live:
                    brokers[instance_id] = frozenset(config.tags)
                if instance_id == self.participant.instance_id:
                    quotas_disabled = _flag(record.simple_fields.get(RATE_LIMIT_DISABLED_KEY))
            elif config.enabled:
                try:
                    servers[instance_id] = ServerAddress.of(config, live, self.outbound)
                except OutboundRefused as exc:
                    log.warning("not routing to %s: %s", instance_id, exc)
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
        with self._segment_lock:  # a watch may drop an entry meanwhile
            for key in [k for k in self._segment_cache if k[0] not in known]:
                del self._segment_cache[key]
        quotas = self._quota_inputs(routes, brokers, quotas_disabled)
        self.snapshot = RoutingSnapshot(routes, servers, live, self.snapshot.version + 1, quotas)
        return self.snapshot

    def _quota_inputs(self, routes: dict[str, TableRoute], brokers: dict[str, frozenset[str]],
                      disabled: bool) -> QuotaInputs:  # fmt: skip
        """What the broker's quotas depend on (``engine.broker.quotas``); each read is watched,
        so a new application quota or default applies at once."""
        paths = self.participant.store.paths
        cluster, applications = (
            _parse_record(path, got[0]) if got is not None else None
            for path, got in ((p, self._read_watched(p, self.poke))
                              for p in (paths.cluster_config, paths.application_quotas))
        )  # fmt: skip
        return quota_inputs(routes, brokers, disabled, cluster, applications)

    def _build_route(self, table: str) -> TableRoute | None:
        paths = self.participant.store.paths
        config_record = self._record(paths.table_config(table))
        try:
            read = self._consistent_read(table)
        except ClusterStateError as exc:
            if table in self.snapshot.routes:
                log.error("keeping the last route of %s: its segment lineage is unreadable: %s",
                          table, exc)  # fmt: skip
                return self.snapshot.routes[table]
            log.error("not routing %s: its segment lineage is unreadable: %s", table, exc)
            # routing every segment would serve a replacement's inputs and outputs together
            return TableRoute(table, {}, {}, unroutable=(
                f"BrokerResourceMissingError: table {table} is not routed: its segment lineage "
                f"cannot be read ({exc}); retry once it is readable again"
            ))  # fmt: skip
        if read is None:
            # the lineage changed during every try: the last route was built from one
            # consistent pair; the writes that changed it poked the next pass
            log.warning("keeping the last route of %s: its segment lineage is changing", table)
            if table in self.snapshot.routes:
                return self.snapshot.routes[table]
            self.poke()
            return None
        view_record, lineage = read
        if config_record is None and view_record is None:
            return None
        config = None
        if config_record is not None:
            try:
                config = TableConfig.from_json(table_config_from_record(config_record))
            except (ClusterStateError, ConfigError) as exc:
                # the segments are still routed; only time and partition pruning are lost
                log.error("table config %s is unreadable: %s", table, exc)
        view = ResourceAssignment.from_record(view_record) if view_record else None
        segment_servers = {}
        for segment, replicas in (view.segments if view else {}).items():
            serving = tuple(sorted(i for i, s in replicas.items() if s in SERVING_STATES))
            segment_servers[segment] = serving
        if lineage is not None:
            served = [s for s, replicas in segment_servers.items() if replicas]
            kept = lineage_consistent_segments(segment_servers, lineage, served)
            segment_servers = {s: r for s, r in segment_servers.items() if s in kept}
        segments = {}
        for segment in segment_servers:
            info = self._segment_info(table, segment)
            segments[segment] = info
        time_column, time_format = self._time_column(table, config)
        return TableRoute(
            table=table,
            segment_servers=segment_servers,
            segments=segments,
            time_column=time_column,
            time_format=time_format,
            partitioning=_partitioning(config, self.schemas.get(split_table_name(table)[0])),
            push_frequency_ms=_push_frequency_ms(config),
            dim_table=bool((config.to_json() if config else {}).get("isDimTable")),
            instance_selector=str(
                ((config.to_json() if config else {}).get("routing") or {}).get(
                    "instanceSelectorType"
                )
                or "balanced"
            ),
            max_qps=parse_qps(
                ((config.to_json() if config else {}).get("quota") or {}).get("maxQueriesPerSecond")
            ),
            broker_tag=broker_tag(config.tenants.broker if config else DEFAULT_TENANT),
        )

    def _consistent_read(self, table: str):
        """(external view record, lineage) as both were at one instant, or None if the lineage
        changed during each of ``CONSISTENT_READ_ATTEMPTS`` tries.

        Neither read order alone is safe. Reading the view first, a lineage entry dropped by
        retention once its hidden segments left the view (just after this view was read)
        would un-hide them here: inputs and outputs routed together, rows counted twice.
        Reading the lineage first, an entry written after it (endReplaceSegments) would be
        missed. So the lineage is read before and after the view, and the pair kept only
        if the lineage znode was not modified in between (same ``mzxid``, which also tells a
        deleted and re-created znode apart); ZooKeeper orders one session's reads, so that
        lineage held while the view was read."""
        for _ in range(CONSISTENT_READ_ATTEMPTS):
            stat = self.participant.client.exists(
                self.participant.store.paths.segment_lineage(table)
            )
            version = stat.mzxid if stat is not None else None
            view_record = self._record(self.participant.store.paths.external_view(table))
            after, version_after = self._lineage(table)
            if version == version_after:
                return view_record, after
        return None

    def _time_column(
        self, table: str, config: TableConfig | None
    ) -> tuple[str | None, DateTimeFormat | None]:
        column = config.time_column_name if config is not None else None
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

    def _segment_info(self, table: str, segment: str) -> SegmentInfo:
        """What the segment's ZooKeeper metadata says, kept until its watch fires (also while
        the znode does not exist yet). A change notified while the metadata is being read is
        not lost: what was read serves this rebuild only, and the next one reads it again."""
        key = (table, segment)
        info = self._segment_cache.get(key)
        if info is not None:
            return info
        reading = object()
        with self._segment_lock:
            self._segment_reads[key] = reading
        path = self.participant.store.paths.segment(table, segment)
        got = self._read_watched(path, lambda _e, k=key: self._stale_segment(k))
        record = _parse_record(path, got[0]) if got is not None else None
        info = SegmentInfo(segment)
        if record is not None:
            info = segment_info_from_metadata(SegmentZKMetadata.from_record(record, table))
        with self._segment_lock:
            if self._segment_reads.pop(key, None) is reading:  # no change notified meanwhile
                self._segment_cache[key] = info
        return info

    def _stale_segment(self, key: tuple[str, str]) -> None:
        # on kazoo's event thread, possibly while the routing thread reads the same segment
        with self._segment_lock:
            self._segment_cache.pop(key, None)
            self._segment_reads.pop(key, None)
        self.poke()

    def _lineage(self, table: str) -> tuple[SegmentLineage | None, int | None]:
        """The table's segment lineage and the zxid of its last change (None while the znode
        does not exist), watched (also while it does not exist yet)."""
        path = self.participant.store.paths.segment_lineage(table)
        got = self._read_watched(path, self.poke)
        if got is None:
            return None, None
        data, stat = got
        if not data:
            return None, stat.mzxid
        return SegmentLineage.from_record(ZNRecord.from_bytes(data, where=path)), stat.mzxid

    def _read_watched(self, path: str, watch) -> tuple[bytes, ZnodeStat] | None:
        """The znode's data and stat with ``watch`` set on its next change; None while it does
        not exist, with ``watch`` set on its creation. kazoo's get leaves no watch on a missing
        znode, so exists sets it; a znode created between the two is read."""
        client = self.participant.client
        while True:
            try:
                return client.get(path, watch=watch)
            except NoNodeError:
                if client.exists(path, watch=watch) is None:
                    return None

    def _children(self, path: str) -> list[str]:
        try:
            return self.participant.client.get_children(path, watch=self.poke)
        except NoNodeError:
            return []

    def _record(self, path: str, watch=None) -> ZNRecord | None:
        try:
            data, _ = self.participant.client.get(path, watch=watch or self.poke)
        except NoNodeError:
            return None
        return _parse_record(path, data)


def _parse_record(path: str, data: bytes) -> ZNRecord | None:
    """The ZNRecord in ``data``; None when empty or malformed (logged)."""
    if not data:
        return None
    try:
        return ZNRecord.from_bytes(data, where=path)
    except ClusterStateError as exc:
        log.error("ignoring a malformed znode: %s", exc)
        return None


def _partitioning(config: TableConfig | None, schema) -> dict[str, ColumnPartitioning]:
    if config is None:
        return {}
    return table_partitioning(config.index_config.segment_partition_config, schema)


def _flag(value: str | None) -> bool:
    return str(value or "").strip().lower() == "true"


def _push_frequency_ms(config: TableConfig | None) -> int:
    """One push-frequency unit (``TableConfig.push_frequency_ms``); a day without a config."""
    return config.push_frequency_ms if config is not None else DAY_MS
