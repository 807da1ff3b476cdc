"""Prometheus metrics of one engine process: each process (and each instance, when tests run
several in one interpreter) has a registry of its own, so ``/metrics`` shows only its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from engine.runtime.http import Response

LATENCY_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class ProcessMetrics:
    """Base of a process's metrics: subclasses create their collectors on ``self.registry``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def response(self) -> Response:
        """The ``GET /metrics`` answer: Prometheus' text format."""
        return Response(200, self.render(), PROMETHEUS_TEXT)


class PerTableChildren:
    """The children of some labelled metrics for each table, looked up once per table:
    ``labels(table)`` hashes and locks on every call, which a query path pays several
    times per request otherwise."""

    def __init__(self, *metrics) -> None:
        self._metrics = metrics
        self._children: dict[str, tuple] = {}

    def of(self, table: str) -> tuple:
        children = self._children.get(table)
        if children is None:
            children = self._children[table] = tuple(m.labels(table) for m in self._metrics)
        return children
