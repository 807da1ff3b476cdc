"""Celery tasks every minion runs, whatever its task types."""

import os
import socket

from celery import shared_task

from tasks import membership  # noqa: F401 - joins the cluster in ZooKeeper when the worker is up
from tasks.queues import MinionQueue


@shared_task(name="sprig.minion.ping", queue=MinionQueue.UNTAGGED.value, time_limit=30)
def ping(token: str) -> dict[str, object]:
    """A minion's liveness answer: echoes `token` with the host and pid that ran it."""
    return {"token": token, "host": socket.gethostname(), "pid": os.getpid()}
