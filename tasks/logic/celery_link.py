"""The controller's side of the Celery link: send an attempt, read its reported state, revoke it.

Every attempt has its own id (``<subtask>.<attempt>``), so a late report from an attempt the
controller gave up on never overwrites the current one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

from celery import states

from tasks.celery_app import app
from tasks.protocol import HARD_LIMIT_GRACE_S, RUN_SUBTASK

log = logging.getLogger(__name__)


def attempt_id(subtask: str, attempt: int) -> str:
    return f"{subtask}.{attempt}"


def send_attempt(*, subtask: str, task_type: str, attempt: int, configs: dict, queue: str,
                 timeout_ms: int, dispatched_ms: int) -> str:  # fmt: skip
    """Put one attempt on the queue of its minion tag; returns its id."""
    task_id = attempt_id(subtask, attempt)
    soft = max(1.0, timeout_ms / 1000.0)
    app.send_task(
        RUN_SUBTASK,
        kwargs={
            "subtask": subtask,
            "task_type": task_type,
            "attempt": attempt,
            "configs": configs,
            "dispatched_ms": dispatched_ms,
        },
        task_id=task_id,
        queue=queue,
        soft_time_limit=soft,
        time_limit=soft + HARD_LIMIT_GRACE_S,
    )
    # send_task subscribes this process to the attempt's result channel, for a .get() that
    # the controller never does (it polls the stored state); unsubscribe, or the
    # subscriptions pile up for the life of the controller
    with contextlib.suppress(AttributeError):
        app.backend.result_consumer.cancel_for(task_id)
    return task_id


@dataclasses.dataclass
class Report:
    """What the backend holds for one attempt: a Celery state and its meta."""

    state: str
    meta: dict
    traceback: str | None = None


def read_report(task_id: str) -> Report:
    meta = app.backend.get_task_meta(task_id)
    status = meta.get("status", states.PENDING)
    result = meta.get("result")
    if status == states.FAILURE:
        # a failure Celery recorded itself: time limit, lost worker, or a crash outside the
        # executor; the result is the exception
        kind = type(result).__name__ if isinstance(result, BaseException) else "Error"
        return Report(status, {"exc_type": kind, "error": repr(result)}, meta.get("traceback"))
    return Report(status, result if isinstance(result, dict) else {}, meta.get("traceback"))


def revoke_attempt(task_id: str) -> None:
    """Give up on an attempt: workers holding it drop it, and a redelivered copy skips itself
    (run_subtask checks for REVOKED before it starts)."""
    try:
        app.control.revoke(task_id)
        app.backend.mark_as_revoked(task_id, reason="given up by the controller")
    except Exception:  # revoking is best effort; the attempt's report is ignored anyway
        log.warning("could not revoke %s", task_id, exc_info=True)
