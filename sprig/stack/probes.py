"""Readiness probes that speak a service's own protocol."""

from __future__ import annotations

import uuid


def minion_answers(redis_url: str, queue: str, timeout_s: float = 3.0) -> bool:
    """True when some minion on `queue` runs the ping task and its result comes back via Redis."""
    from celery import Celery

    app = Celery("sprig-probe", broker=redis_url, backend=redis_url)
    try:
        token = uuid.uuid4().hex
        result = app.send_task("sprig.minion.ping", args=[token], queue=queue)
        answer = result.get(timeout=timeout_s)
        result.forget()
        return answer.get("token") == token
    finally:
        app.close()
