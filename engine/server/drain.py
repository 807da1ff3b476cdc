"""Make-before-break on the server side: segments taken away from this server keep answering
queries for a while after the server stopped reporting them.

Brokers route on the external view, which the controller aggregates from the servers'
current states. A server that unloaded a segment the moment the ideal state took it away
would get queries for it until the brokers learned the replica is gone, and answer them with
"segment not served". So a dropped (or ONLINE -> OFFLINE) segment is first left out of the
current state, then served for ``SPRIG_SERVER_DROP_DRAIN_S`` seconds counted from that
publication, and only then unloaded (and its files deleted).

The worker loop owns the queue: it adds, takes back (a segment assigned here again before
its drain ended) and releases; a timer only pokes the loop when a drain is due.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping

from engine.common.env import seconds_from_env
from engine.segment import ImmutableSegment

DRAIN_ENV = "SPRIG_SERVER_DROP_DRAIN_S"
#: brokers see an external-view change within about a second (the controller aggregates
#: every ``SPRIG_EXTERNAL_VIEW_INTERVAL_S``, default 1 s; the brokers' watches fire at once)
DEFAULT_DRAIN_S = 3.0
MAX_DRAIN_S = 3600.0


def drain_seconds_from_env(environ: Mapping[str, str] | None = None) -> float:
    """``SPRIG_SERVER_DROP_DRAIN_S`` in seconds (unset or empty: 3; 0 unloads at once).
    Raises ConfigError naming the variable for anything but a number in [0, 3600]."""
    return seconds_from_env(DRAIN_ENV, DEFAULT_DRAIN_S, maximum=MAX_DRAIN_S, environ=environ)


@dataclasses.dataclass
class RetiredSegment:
    resource: str
    name: str
    segment: ImmutableSegment
    remove_dir: bool  # dropped (its local copy goes too), not just OFFLINE
    due: float | None = None  # time.monotonic(); None until the current state left it out


class DrainQueue:
    """Retired segments of every resource. ``wake`` is called (from a timer thread) when a
    drain is due, so the worker loop runs ``due()`` soon."""

    def __init__(self, seconds: float, wake: Callable[[], None] | None = None) -> None:
        self.seconds = seconds
        self._wake = wake
        self._retired: dict[tuple[str, str], RetiredSegment] = {}

    def __len__(self) -> int:
        return len(self._retired)

    def add(self, resource: str, name: str, segment: ImmutableSegment, *, remove_dir: bool) -> None:
        self._retired[(resource, name)] = RetiredSegment(resource, name, segment, remove_dir)

    def get(self, resource: str, name: str) -> RetiredSegment | None:
        return self._retired.get((resource, name))

    def discard(self, resource: str, name: str) -> None:
        self._retired.pop((resource, name), None)

    def names(self, resource: str) -> set[str]:
        return {name for (res, name) in self._retired if res == resource}

    def unpublished(self) -> set[str]:
        """Resources with segments whose grace period has not started."""
        return {r.resource for r in self._retired.values() if r.due is None}

    def published(self, resource: str) -> None:
        """The resource's current state no longer lists its retired segments: their grace
        period starts now."""
        started = False
        for retired in self._retired.values():
            if retired.resource == resource and retired.due is None:
                retired.due = time.monotonic() + self.seconds
                started = True
        if started and self._wake is not None:
            timer = threading.Timer(self.seconds + 0.05, self._wake)
            timer.daemon = True
            timer.start()

    def due(self) -> list[RetiredSegment]:
        """Remove and return the segments whose grace period is over."""
        now = time.monotonic()
        done = [r for r in self._retired.values() if r.due is not None and r.due <= now]
        for retired in done:
            del self._retired[(retired.resource, retired.name)]
        return done

    def take_all(self) -> list[RetiredSegment]:
        done = list(self._retired.values())
        self._retired.clear()
        return done
