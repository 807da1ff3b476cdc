"""The stream layer's errors, under the engine's one tree.

Pinot's consumers split failures in two, and the consuming loop acts on the split: a
transient error (broker unreachable, request timed out, leader moving) is retried after a
back-off; a permanent one (topic deleted, authorization refused, bad client setting) stops the
partition and is reported to the controller with ``segmentStoppedConsuming``.
"""

from __future__ import annotations

from engine.common.errors import EngineError


class StreamError(EngineError):
    """Something went wrong talking to the stream."""


class TransientStreamError(StreamError):
    """Retry later: the same call may succeed once the broker recovers."""


class PermanentStreamError(StreamError):
    """Retrying will not help: the topic, partition or client setting is wrong."""


class OffsetOutOfRangeError(StreamError):
    """The requested offset is no longer (or not yet) in the partition, e.g. deleted by
    retention. ``earliest``/``latest`` are the partition's current bounds when known."""

    def __init__(self, message: str, *, offset: int, earliest: int | None, latest: int | None):
        self.offset = offset
        self.earliest = earliest
        self.latest = latest
        super().__init__(message)
