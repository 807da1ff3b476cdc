"""The controller's consumer-lag series at `/metrics`: each scrape reads the latest poll of the
Kafka cluster the consumer_offsets table watches, polling again when that poll is older than
POLL_INTERVAL_S (a scrape every few seconds does not turn into a poll every few seconds). The
points of successive polls give the time lag. Registered with the controller's `/metrics` by
the app's ready(), so the cluster app does not import monitoring."""

from __future__ import annotations

import threading
import time

from controller.errors import ServiceUnavailable
from engine.common.clock import now_ms
from monitoring.errors import KafkaUnavailableError
from monitoring.exporter import LagExporter
from monitoring.logic.burrow_status import cluster_name
from monitoring.logic.lag_source import reader

POLL_INTERVAL_S = 10.0

_exporter: LagExporter | None = None
_poll_lock = threading.Lock()  # one poll at a time; concurrent scrapes wait for its answer


def exporter() -> LagExporter:
    global _exporter
    if _exporter is None or _exporter.cluster_name != cluster_name():
        _exporter = LagExporter(cluster_name())
    return _exporter


def poll(into: LagExporter) -> None:
    """One collector round: every group, its commits and the end offsets."""
    kafka = reader()
    started = time.monotonic()
    offsets = kafka.group_offsets(listing.group_id for listing in kafka.list_groups())
    into.observe(offsets, now_ms(), (time.monotonic() - started) * 1000)


def prometheus_lines() -> list[str]:
    """No lines while no consumer_offsets table names a Kafka cluster; a comment naming the
    reason when Kafka does not answer (stale lag would be wrong, so none is served)."""
    target = exporter()
    with _poll_lock:
        last = target.polled_at_ms
        if last is None or now_ms() - last >= POLL_INTERVAL_S * 1000:
            try:
                poll(target)
            except ServiceUnavailable:
                return []
            except KafkaUnavailableError as exc:
                return [f"# consumer lag not polled: {' '.join(str(exc).split())}"]
    return target.lines()
