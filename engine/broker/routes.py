"""What the broker routes with: the ``RoutingSnapshot`` that ``engine.broker.routing``'s
``RoutingManager`` rebuilds from ZooKeeper and readers take without locking, its per-table
``TableRoute`` and server addresses, and a segment's pruning facts from its ZK metadata."""

from __future__ import annotations

import dataclasses

from engine.broker.errors import BROKER_RESOURCE_MISSING_ERROR_CODE
from engine.broker.pruning import ColumnPartitioning, SegmentInfo, recorded_partitions
from engine.broker.quotas import QuotaInputs
from engine.clusterstate import InstanceConfig, SegmentZKMetadata
from engine.query.errors import QueryError
from engine.runtime.outbound import OutboundPolicy
from engine.spi.datetime_format import UNIT_MILLIS, DateTimeFormat
from engine.spi.table_name import TABLE_TYPES, table_name_with_type

DAY_MS = UNIT_MILLIS["DAYS"]  # a table's push frequency when it has no config


@dataclasses.dataclass(frozen=True)
class ServerAddress:
    instance_id: str
    host: str
    port: int
    admin_port: int = -1

    @property
    def health_url(self) -> str:
        port = self.admin_port if self.admin_port > 0 else self.port
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        return f"http://{host}:{port}/health"

    @classmethod
    def of(cls, config: InstanceConfig, live: frozenset[str],
           policy: OutboundPolicy) -> ServerAddress:  # fmt: skip
        """Where to send ``config``'s queries and health probes: its own address, or one an
        API caller wrote, checked (its checked address kept) if the server is live (it is
        never asked otherwise); OutboundRefused when the policy refuses it."""
        host = config.host
        if not config.self_registered and config.instance_id in live:
            host = policy.instance_target(
                host, config.port, "/query", self_registered=False,
                what=f"server {config.instance_id}'s address set through the REST API",
            ).address  # fmt: skip
        return cls(config.instance_id, host, config.port, config.admin_port)


@dataclasses.dataclass(frozen=True)
class TableRoute:
    table: str  # with type
    segment_servers: dict[str, tuple[str, ...]]  # segment -> serving replicas (sorted)
    segments: dict[str, SegmentInfo]
    time_column: str | None = None
    time_format: DateTimeFormat | None = None
    partitioning: dict[str, ColumnPartitioning] = dataclasses.field(default_factory=dict)
    push_frequency_ms: int = DAY_MS
    instance_selector: str = "balanced"  # routing.instanceSelectorType (engine.broker.selection)
    unroutable: str | None = None  # why the table cannot be queried (then no segments)
    max_qps: float | None = None  # quota.maxQueriesPerSecond, for the whole cluster
    broker_tag: str = "DefaultTenant_BROKER"  # the tag of the brokers that serve the table
    dim_table: bool = False  # isDimTable: on every server, for lookup joins

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
    quotas: QuotaInputs | None = None

    def tables_of(self, raw_table: str) -> list[str]:
        typed = (table_name_with_type(raw_table, kind) for kind in TABLE_TYPES)
        return [t for t in typed if t in self.routes]

    def check_routable(self, tables: list[str]) -> None:
        """Raise ``TableUnroutableError`` if a routed table of ``tables`` cannot be queried."""
        reasons = [self.routes[t].unroutable for t in tables if t in self.routes]
        reasons = [r for r in reasons if r]
        if reasons:
            raise TableUnroutableError("; ".join(reasons))


class TableUnroutableError(QueryError):
    """A table the broker refuses to route (Pinot's BrokerResourceMissingError, 410)."""

    error_code = BROKER_RESOURCE_MISSING_ERROR_CODE


def segment_info_from_metadata(meta: SegmentZKMetadata) -> SegmentInfo:
    """Time range in epoch ms (from ``segment.start/end.time`` in ``segment.time.unit``) and
    partitions with the function that computed them (Pinot's ``segment.partition.metadata``)."""
    start, end = meta.start_time_ms, meta.end_time_ms
    if start is None or end is None:  # an unknown bound: the segment is never time-pruned
        start = end = None
    raw = meta.extra.get("segment.partition.metadata")
    partitions, functions = recorded_partitions(raw, meta.segment_name)
    return SegmentInfo(meta.segment_name, start, end, partitions, functions, meta.total_docs)
