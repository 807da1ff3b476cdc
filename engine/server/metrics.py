"""Prometheus metrics of a server process."""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram

from engine.runtime.metrics import LATENCY_BUCKETS_S, ProcessMetrics
from engine.runtime.pinot_metrics import PinotMetrics
from engine.spi.table_name import split_table_name


class ServerMetrics(ProcessMetrics):
    def __init__(self) -> None:
        super().__init__()
        self.queries = Counter(
            "sprig_server_queries", "Queries executed", ["table"], registry=self.registry
        )
        self.query_errors = Counter(
            "sprig_server_query_errors", "Queries that failed", ["table"], registry=self.registry
        )
        self.latency = Histogram(
            "sprig_server_query_latency_seconds", "Query execution time on this server",
            ["table"], buckets=LATENCY_BUCKETS_S, registry=self.registry,
        )  # fmt: skip
        self.docs_scanned = Counter(
            "sprig_server_docs_scanned", "Documents scanned by queries", ["table"],
            registry=self.registry,
        )  # fmt: skip
        self.segments_queried = Counter(
            "sprig_server_segments_queried", "Segments queried", ["table"], registry=self.registry
        )
        self.segments = Gauge(
            "sprig_server_segments", "Hosted segments by state", ["state"], registry=self.registry
        )
        # real-time ingestion, per table and partition (Pinot's realtimeRowsConsumed,
        # invalidRealtimeRowsDropped, realtimeRowsFiltered, realtimeIngestionDelayMs, and the
        # rate Pinot's realtimeRowsConsumed meter gives as its one-minute rate)
        partition = ["table", "partition"]
        self.rows_consumed = Counter(
            "sprig_server_realtime_rows_consumed", "Rows indexed into consuming segments",
            partition, registry=self.registry,
        )  # fmt: skip
        self.rows_dropped = Counter(
            "sprig_server_realtime_rows_dropped", "Malformed messages skipped", partition,
            registry=self.registry,
        )  # fmt: skip
        self.rows_filtered = Counter(
            "sprig_server_realtime_rows_filtered", "Rows dropped by the ingestion filter",
            partition, registry=self.registry,
        )  # fmt: skip
        self.ingestion_delay = Gauge(
            "sprig_server_realtime_ingestion_delay_ms",
            "Milliseconds since the newest consumed message was produced", partition,
            registry=self.registry,
        )  # fmt: skip
        self.ingestion_rate = Gauge(
            "sprig_server_realtime_ingestion_rate_rows_per_second",
            "Rows indexed per second since the previous scrape", partition,
            registry=self.registry,
        )  # fmt: skip
        self._reported: dict[tuple[str, int], tuple[int, int, int]] = {}
        self._observed_at: float | None = None
        # Pinot's names, as its JMX exporter gives them (engine.runtime.pinot_metrics)
        self.pinot = PinotMetrics("server")
        self.pinot.declare("meter", "queries")
        self.pinot.declare("meter", "realtimeRowsConsumed")
        self._delays: dict[tuple, float] = {}
        self.pinot.gauge("realtimeIngestionDelayMs", lambda: dict(self._delays))
        self.registry.register(self.pinot.collector())
        self.pinot_queries = self.pinot.meter("queries")

    def document_counts(self, read) -> None:
        """Pinot's documentCount gauge per table: ``read()`` gives {table_TYPE: docs}."""

        def by_table() -> dict[tuple, float]:
            return {_labels(table): docs for table, docs in read().items()}

        self.pinot.gauge("documentCount", by_table)

    def observe_ingestion(self, totals: dict[tuple[str, int], dict],
                          at_s: float | None = None) -> None:  # fmt: skip
        """Advance the counters to ``totals`` (RealtimeSegmentManager.ingestion_totals);
        counters only move forward, so each gets what is new since the last scrape. The rate
        is rows indexed per second between this scrape and the previous one (``at_s``:
        monotonic seconds, default now)."""
        at = time.monotonic() if at_s is None else at_s
        elapsed = None if self._observed_at is None else at - self._observed_at
        self._observed_at = at
        for (table, partition), now in totals.items():
            labels = (table, str(partition))
            before = self._reported.get((table, partition), (0, 0, 0))
            current = (now["consumed"], now["malformed"], now["filtered"])
            for counter, old, new in zip(
                (self.rows_consumed, self.rows_dropped, self.rows_filtered), before, current,
                strict=True,
            ):  # fmt: skip
                if new > old:
                    counter.labels(*labels).inc(new - old)
            consumed = current[0] - before[0]
            if consumed > 0:  # Pinot's realtimeRowsConsumed, global and per partition
                self.pinot.mark("realtimeRowsConsumed", (), consumed)
                self.pinot.mark("realtimeRowsConsumed", _labels(table, partition), consumed)
            if elapsed is not None and elapsed > 0:
                rate = max(0, current[0] - before[0]) / elapsed
                self.ingestion_rate.labels(*labels).set(round(rate, 3))
            self._reported[(table, partition)] = tuple(
                max(o, n) for o, n in zip(before, current, strict=True)
            )
            if now["delay_ms"] is not None:
                self.ingestion_delay.labels(*labels).set(now["delay_ms"])
                self._delays[_labels(table, partition)] = now["delay_ms"]


def _labels(table: str, partition: int | None = None) -> tuple:
    """Pinot's labels of a table name with its type (and a partition)."""
    raw, table_type = split_table_name(table)
    labels = (("table", raw), ("tableType", table_type or ""))
    return labels if partition is None else (*labels, ("partition", str(partition)))
