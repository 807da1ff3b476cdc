"""Prometheus metrics of a server process."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from engine.runtime.metrics import LATENCY_BUCKETS_S, ProcessMetrics


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
