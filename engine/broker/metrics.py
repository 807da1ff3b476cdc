"""Prometheus metrics of a broker process."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from engine.runtime.metrics import LATENCY_BUCKETS_S, ProcessMetrics
from engine.runtime.pinot_metrics import PinotMetrics

# Pinot's broker metrics (BrokerMeter, BrokerQueryPhase, BrokerTimer) that Sprig records
PINOT_GLOBAL_METERS = ("queriesGlobal", "multiStageQueriesGlobal",
                       "brokerResponsesWithProcessingExceptions", "requestDroppedDueToAccessError")  # fmt: skip
PINOT_PHASES = ("requestCompilation", "queryRouting", "scatterGather", "reduce",
                "queryExecution")  # fmt: skip


class BrokerMetrics(ProcessMetrics):
    def __init__(self) -> None:
        super().__init__()
        # Pinot's names, as its JMX exporter gives them (engine.runtime.pinot_metrics)
        self.pinot = PinotMetrics("broker")
        for name in PINOT_GLOBAL_METERS:
            self.pinot.declare("meter", name)
        self.pinot.declare("timer", "queryTotalTimeMs")
        self.registry.register(self.pinot.collector())
        self._pinot_tables: dict[str, tuple] = {}  # table -> (phase timers, queries meter)
        self._total_time = self.pinot.timer("queryTotalTimeMs")
        self._queries_global = self.pinot.meter("queriesGlobal")
        self._with_exceptions = self.pinot.meter("brokerResponsesWithProcessingExceptions")
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
        # Pinot's FRESHNESS_LAG_MS: how far the last answer that read consuming segments
        # trailed the stream (now - minConsumingFreshnessTimeMs).
        self.freshness_lag = Gauge(
            "sprig_broker_freshness_lag_ms",
            "now - minConsumingFreshnessTimeMs of the table's last query that read consuming "
            "segments", ["table"], registry=self.registry,
        )  # fmt: skip
        self.docs_scanned = Counter(
            "sprig_broker_docs_scanned", "Documents scanned by queries", ["table"],
            registry=self.registry,
        )  # fmt: skip

    def record_query(self, table: str, phases: dict[str, float], total_ms: float,
                     exceptions: bool) -> None:  # fmt: skip
        """One answered query in Pinot's metrics: its phases' times (ms) per table, the total,
        and the meters."""
        per_table = self._pinot_tables.get(table)
        if per_table is None:
            labels = (("table", table),)
            per_table = self._pinot_tables[table] = (
                {name: self.pinot.timer(name, labels) for name in PINOT_PHASES},
                self.pinot.meter("queries", labels),
            )
        timers, queries = per_table
        timings = [(timers[name], ms) for name, ms in phases.items()]
        timings.append((timers["queryExecution"], total_ms))
        timings.append((self._total_time, total_ms))
        marks = [queries, self._queries_global]
        if exceptions:
            marks.append(self._with_exceptions)
        self.pinot.record(timings, marks)
