"""Readiness probes that speak a service's own protocol."""

from __future__ import annotations

import contextlib
import uuid


def minion_answers(redis_url: str, queue: str, timeout_s: float = 3.0) -> bool:
    """True when some minion on `queue` runs the ping task and its result comes back via Redis."""
    from celery import Celery

    app = Celery("sprig-probe", broker=redis_url, backend=redis_url)
    result = None
    try:
        token = uuid.uuid4().hex
        result = app.send_task("sprig.minion.ping", args=[token], queue=queue)
        answer = result.get(timeout=timeout_s)
        result.forget()
        return answer.get("token") == token
    finally:
        if result is not None:
            # An unanswered result stays registered with the backend, and at exit its
            # __del__ would unsubscribe through a Redis that may be gone by then (a noisy
            # "Retry limit exceeded" on the quickstart's console): let go of it now.
            with contextlib.suppress(Exception):
                app.backend.remove_pending_result(result)
            result.backend = None
        app.close()
