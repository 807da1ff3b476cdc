"""What every engine process shares: the server, the broker and the minions build on it.

Public API::

    from engine.runtime import (FollowLoop, HttpService, Membership, Participant,
                                ProcessError, ProcessMetrics, Request, Response, Router,
                                SchemaCache)

Modules, bottom-up: ``errors``; ``http`` (a small HTTP/1.1 service: ``Router``, ``Request``,
``Response``, ``HttpService``); ``metrics`` (a Prometheus registry per process);
``follow`` (``FollowLoop``: the background loop that runs a pass when poked and at an
interval, retrying with backoff); ``participant`` (the ZooKeeper session, the instance config
and the live-instance node, and ``Membership``, the loop that keeps them registered);
``schemas`` (table schemas read from ZooKeeper, cached until their znode changes).

Nothing here knows about segments or queries; the processes above add those.
"""

from engine.runtime.errors import ProcessError
from engine.runtime.follow import FollowLoop
from engine.runtime.http import HttpService, Request, Response, Router
from engine.runtime.metrics import ProcessMetrics
from engine.runtime.participant import Membership, Participant
from engine.runtime.schemas import SchemaCache

__all__ = [
    "FollowLoop",
    "HttpService",
    "Membership",
    "Participant",
    "ProcessError",
    "ProcessMetrics",
    "Request",
    "Response",
    "Router",
    "SchemaCache",
]
