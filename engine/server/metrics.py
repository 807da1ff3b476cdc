"""Prometheus metrics of a server or broker, each process with its own registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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

    def render(self) -> bytes:
        return generate_latest(self.registry)


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.queries = Counter(
            "sprig_broker_queries", "Queries received", ["table"], registry=self.registry
        )
        self.latency = Histogram(
            "sprig_broker_query_latency_seconds", "End-to-end query time at the broker",
            ["table"], buckets=LATENCY_BUCKETS_S, registry=self.registry,
        )  # fmt: skip
        self.partial = Counter(
            "sprig_broker_partial_responses", "Responses with partialResult true", ["table"],
            registry=self.registry,
        )  # fmt: skip
        self.server_failures = Counter(
            "sprig_broker_server_failures", "Server requests that failed or timed out",
            ["server"], registry=self.registry,
        )  # fmt: skip
        self.docs_scanned = Counter(
            "sprig_broker_docs_scanned", "Documents scanned by queries", ["table"],
            registry=self.registry,
        )  # fmt: skip

    def render(self) -> bytes:
        return generate_latest(self.registry)
