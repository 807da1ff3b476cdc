"""Celery tasks every minion runs: the liveness ping and the one entry to every executor.

A subtask attempt reports through the Celery result backend (Redis) under its own id, with
Pinot's subtask states as Celery custom states: ``RUNNING`` (meta: startTime, worker,
progress) when it starts and on each progress report, then ``SUCCESS`` (the controller's
COMPLETED) with the executor's result, or ``TASK_ERROR`` / ``TIMED_OUT`` with the full
traceback. The controller mirrors these into its database (tasks.logic.sync).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback

from celery import shared_task, states
from celery.exceptions import Ignore, SoftTimeLimitExceeded
from celery.signals import worker_process_init

from engine.common.clock import now_ms

# importing membership also joins the cluster in ZooKeeper when the worker is up
from tasks import membership, minion_metrics, registry
from tasks.executors.base import SubtaskContext
from tasks.protocol import HARD_LIMIT_GRACE_S, RUN_SUBTASK
from tasks.queues import MinionQueue
from tasks.states import SubtaskState

log = logging.getLogger(__name__)


@shared_task(name="sprig.minion.ping", queue=MinionQueue.UNTAGGED.value, time_limit=30)
def ping(token: str) -> dict[str, object]:
    """A minion's liveness answer: echoes `token` with the host and pid that ran it."""
    return {"token": token, "host": socket.gethostname(), "pid": os.getpid()}


@worker_process_init.connect
def _prewarm_spark(**_kwargs) -> None:
    """Start this worker process's SparkSession now, in the background (Celery gives a new
    process only seconds to report in), so no subtask waits for Spark to start."""
    if os.environ.get("SPRIG_MINION_SPARK_PREWARM", "false").lower() != "true":
        return
    from spark_jobs.minion.session import minion_spark

    threading.Thread(target=minion_spark, name="spark-prewarm", daemon=True).start()


def _worker_id() -> str:
    host = os.environ.get("SPRIG_INSTANCE_HOST") or None
    return membership.minion_instance_id(os.environ.get("SPRIG_MINION_NAME", "minion"), host)


@shared_task(
    bind=True,
    name=RUN_SUBTASK,
    queue=MinionQueue.UNTAGGED.value,
    soft_time_limit=3600,
    time_limit=3600 + HARD_LIMIT_GRACE_S,
    acks_late=True,
)
def run_subtask(self, subtask: str, task_type: str, attempt: int, configs: dict,
                dispatched_ms: int) -> dict:  # fmt: skip
    """Run one attempt of one subtask. Its id is ``<subtask>.<attempt>``; the queue is the
    task's minionInstanceTag and the time limits its ``<Type>.timeoutMs`` (set per call)."""
    # the controller marks an attempt it gave up on (timed out, stopped, deleted) as REVOKED
    # in the result backend; a redelivered message of such an attempt must not run again
    table = str(configs.get("tableName", ""))
    minion_metrics.mark("numberTasks", table, task_type)
    if self.AsyncResult(self.request.id).state == states.REVOKED:
        log.info("subtask %s attempt %d was revoked; skipping it", subtask, attempt)
        minion_metrics.mark("numberTasksCancelled", table, task_type)
        raise Ignore()
    worker = _worker_id()
    started = now_ms()
    metric_labels = minion_metrics.labels(table, task_type)
    minion_metrics.TASK_QUEUEING.labels(**metric_labels).observe(
        max(0, started - int(dispatched_ms or started))
    )
    meta = {"startTime": started, "worker": worker, "progress": "", "attempt": attempt,
            "queueingMs": max(0, started - int(dispatched_ms or started))}  # fmt: skip
    self.update_state(state=SubtaskState.RUNNING.value, meta=meta)

    def report_progress(message: str) -> None:
        meta["progress"] = str(message)[:1000]
        self.update_state(state=SubtaskState.RUNNING.value, meta=meta)

    ctx = SubtaskContext(task_type, subtask, attempt, dict(configs), worker, report_progress)
    minion_metrics.mark("numberTasksExecuted", table, task_type)
    running = minion_metrics.NUMBER_OF_TASKS.labels(**metric_labels)
    running.inc()
    try:
        try:
            executor = registry.executor(task_type)
        except registry.UnknownTaskTypeError:
            # no attempt on this minion can ever succeed: Pinot's fatal failure
            minion_metrics.mark("numberTasksFatalFailed", table, task_type)
            _finish(self, SubtaskState.TASK_ERROR, meta, traceback.format_exc())
        try:
            result = executor.execute(ctx)
        except SoftTimeLimitExceeded:
            minion_metrics.mark("numberTasksFailed", table, task_type)
            _finish(self, SubtaskState.TIMED_OUT, meta, traceback.format_exc())
        except Exception:  # any executor failure is the subtask's error, with its traceback
            log.exception("subtask %s attempt %d failed", subtask, attempt)
            minion_metrics.mark("numberTasksFailed", table, task_type)
            _finish(self, SubtaskState.TASK_ERROR, meta, traceback.format_exc())
    finally:
        running.dec()
        minion_metrics.TASK_EXECUTION.labels(**metric_labels).observe(now_ms() - started)
    minion_metrics.mark("numberTasksCompleted", table, task_type)
    return {**meta, "finishTime": now_ms(), "result": result if result is not None else {}}


def _finish(task, state: SubtaskState, meta: dict, error: str):
    task.update_state(state=state.value, meta={**meta, "finishTime": now_ms(), "error": error})
    # Ignore keeps Celery from overwriting the custom state with FAILURE
    raise Ignore()
