"""A minion's membership in the cluster, as Pinot's minions have it: the worker registers its
instance config (``CONFIGS/PARTICIPANT/Minion_<host>_<name>``, tagged with its queues) and
holds an ephemeral ``LIVEINSTANCES`` node for as long as it runs, so that the controller's
``/instances`` API and the console's cluster manager list it.

Registration runs in a background thread of the worker's main process: a ZooKeeper that is
down or late delays it (it is retried) and never stops the worker from taking tasks.
"""

from __future__ import annotations

import logging
import os
import socket

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from engine.clusterstate import InstanceConfig
from engine.runtime import Membership, Participant

log = logging.getLogger(__name__)

_membership: Membership | None = None


def minion_instance_id(name: str, host: str | None = None) -> str:
    """``Minion_<host>_<name>``: stable across restarts of the same minion, as Pinot's
    ``Minion_<host>_<port>`` is (a minion has no port here, so its name stands in)."""
    return f"Minion_{host or socket.gethostname()}_{name}"


def minion_tags() -> list[str]:
    raw = os.environ.get("SPRIG_MINION_TAGS", "minion_untagged")
    return [tag.strip() for tag in raw.split(",") if tag.strip()]


@worker_ready.connect
def join_cluster(**_kwargs) -> None:
    global _membership
    if _membership is not None:
        return
    host = os.environ.get("SPRIG_INSTANCE_HOST") or socket.gethostname()
    instance_id = minion_instance_id(os.environ.get("SPRIG_MINION_NAME", "minion"), host)
    participant = Participant(
        settings.ZK_ADDRESS,
        settings.CLUSTER_NAME,
        InstanceConfig(instance_id=instance_id, host=host, port=-1, tags=minion_tags()),
        session_timeout_s=settings.ZK_SESSION_TIMEOUT_S,
        request_timeout_s=settings.ZK_REQUEST_TIMEOUT_S,
    )
    # connects in its own thread, retrying while ZooKeeper is down, then re-registers in
    # every new session
    _membership = Membership(participant, interval_s=10.0, connect_timeout_s=10.0)
    _membership.start()
    log.info("minion %s joins cluster %s at %s", instance_id, settings.CLUSTER_NAME,
             settings.ZK_ADDRESS)  # fmt: skip


@worker_shutdown.connect
def leave_cluster(**_kwargs) -> None:
    """Close the ZooKeeper session: the live-instance node goes at once, not after the
    session timeout."""
    global _membership
    if _membership is None:
        return
    membership, _membership = _membership, None
    membership.stop(timeout_s=5)
    membership.participant.stop()
