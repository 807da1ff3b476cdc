"""The minion's Prometheus metrics, named as Pinot's minion exports them
(``pinot_minion_<metric>_<attr>{table,tableType,taskType}``): the meters
numberTasks{,Executed,Completed,Cancelled,Failed,FatalFailed} as ``_Count``, the gauge
numberOfTasks as ``_Value``, and the timers taskQueueing and taskExecution (milliseconds) as
histograms.

Subtasks run in Celery's pool processes, so the metrics use prometheus_client's multiprocess
mode (``PROMETHEUS_MULTIPROC_DIR``, set by ``sprig minion``); the worker's main process
serves them all at ``/metrics`` on ``SPRIG_MINION_METRICS_PORT`` (Pinot's minion port is
9514; unset means no endpoint).
"""

from __future__ import annotations

import logging
import os

from celery.signals import worker_init, worker_process_shutdown
from prometheus_client import CollectorRegistry, Gauge, Histogram, multiprocess, start_http_server

from engine.clusterstate import split_table_name

log = logging.getLogger(__name__)

LABELS = ("table", "tableType", "taskType")
MS_BUCKETS = (10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000,
              900_000, 3_600_000)  # fmt: skip
_MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def _meter(name: str) -> Gauge:
    # a gauge summed over every process (dead ones included) reads as Pinot's meter count
    kwargs = {"multiprocess_mode": "sum"} if _MULTIPROCESS else {}
    return Gauge(f"pinot_minion_{name}_Count", f"minion meter {name}", LABELS, **kwargs)


METERS = {
    name: _meter(name)
    for name in ("numberTasks", "numberTasksExecuted", "numberTasksCompleted",
                 "numberTasksCancelled", "numberTasksFailed", "numberTasksFatalFailed")
}  # fmt: skip
NUMBER_OF_TASKS = Gauge("pinot_minion_numberOfTasks_Value", "subtasks running now", LABELS,
                        **({"multiprocess_mode": "livesum"} if _MULTIPROCESS else {}))  # fmt: skip
TASK_QUEUEING = Histogram("pinot_minion_taskQueueing", "ms from dispatch to start", LABELS,
                          buckets=MS_BUCKETS)  # fmt: skip
TASK_EXECUTION = Histogram("pinot_minion_taskExecution", "ms from start to end", LABELS,
                           buckets=MS_BUCKETS)  # fmt: skip


def labels(table_name: str, task_type: str) -> dict[str, str]:
    raw, kind = split_table_name(table_name or "")
    return {"table": raw, "tableType": kind or "", "taskType": task_type}


def mark(meter: str, table_name: str, task_type: str) -> None:
    METERS[meter].labels(**labels(table_name, task_type)).inc()


@worker_init.connect
def serve_metrics(**_kwargs) -> None:
    """In the worker's main process: serve every pool process's metrics at /metrics."""
    port = os.environ.get("SPRIG_MINION_METRICS_PORT")
    if not port:
        return
    registry = CollectorRegistry()
    if _MULTIPROCESS:
        multiprocess.MultiProcessCollector(registry)
    try:
        start_http_server(int(port), registry=registry)
    except OSError as exc:  # a busy port must not stop the minion from working
        log.warning("minion metrics not served on port %s: %s", port, exc)
        return
    log.info("minion metrics at http://0.0.0.0:%s/metrics", port)


@worker_process_shutdown.connect
def _forget_process(pid=None, **_kwargs) -> None:
    if _MULTIPROCESS:
        multiprocess.mark_process_dead(pid or os.getpid())
