"""Stall detection of a consuming partition: the silent failure of a real-time system is a
consumer that stops moving while its partition keeps growing (a client stuck on a broker that
froze or lost leadership, a fetch that never comes back), with no error anywhere.

A partition is stalled when it has made no progress for ``stall_ms`` (default 30 s;
``SPRIG_REALTIME_STALL_S``) while the partition upstream has offsets past the consumer's
position. The position is the client's own when it knows one (past the commit and abort
markers of transactions, which hold no row), else the next offset to consume; so an idle
partition, or one whose last offsets are markers, is never taken for a stalled one.

The consuming loop asks ``due`` after each empty fetch (upstream is looked up at most once per
``check_ms``, 5 s) and then ``stalls_at`` with the position and the upstream offset.
Detection logs a warning (once per stall), counts it and marks the partition stalled (for
consumingSegmentsInfo, the console and the metrics); if the next check finds it still stuck,
``stalls_at`` answers True and the loop recreates the consumer, and again at every later check
while it stays stuck. (The client may recover by itself in between; a fresh one asks for new
metadata, so it finds a moved leader.) ``progressed``, after a batch with rows, ends the stall.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from engine.common.clock import now_ms
from engine.common.env import seconds_from_env

log = logging.getLogger(__name__)
STALL_ENV = "SPRIG_REALTIME_STALL_S"
DEFAULT_STALL_S = 30.0
CHECK_MS = 5_000  # how often an idle partition asks upstream for its latest offset


def stall_seconds_from_env(environ: Mapping[str, str] | None = None) -> float:
    """``SPRIG_REALTIME_STALL_S`` in seconds (unset or empty: 30). ConfigError naming the
    variable for anything but a positive number."""
    return seconds_from_env(STALL_ENV, DEFAULT_STALL_S, zero_ok=False, environ=environ)


class StallWatch:
    """One partition's progress clock. ``clock`` is monotonic seconds (injectable for tests)."""

    def __init__(self, segment: str, stall_ms: float, *, check_ms: float = CHECK_MS,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.segment = segment
        self.stall_ms = stall_ms
        self.check_ms = min(check_ms, stall_ms)
        self._clock = clock
        self._progress_at = clock()
        self._checked_at = clock()
        self._acted_at = clock()  # the detection, or the last recreation
        self.stalled_since_ms: int | None = None  # wall clock, for consumingSegmentsInfo
        self.stalls = 0  # stalls detected (not recreations)
        self.recoveries = 0  # consumers recreated

    @property
    def stalled(self) -> bool:
        return self.stalled_since_ms is not None

    def progressed(self) -> None:
        if self.stalled:
            log.info("segment %s: consuming again after a stall of %.1f s", self.segment,
                     (now_ms() - self.stalled_since_ms) / 1000)  # fmt: skip
            self.stalled_since_ms = None
        self._progress_at = self._clock()

    def due(self) -> bool:
        """True when an idle partition has gone ``check_ms`` without asking upstream."""
        now = self._clock()
        if (now - self._checked_at) * 1000 < self.check_ms:
            return False
        self._checked_at = now
        return (now - self._progress_at) * 1000 >= self.stall_ms

    def stalls_at(self, position: int, upstream: int | None) -> bool:
        """Whether the consumer must be recreated now: the partition has been stalled (no
        progress for ``stall_ms`` while ``upstream``, one past the newest offset or None when
        unknown, is beyond ``position``) since a check ago. On True the caller recreates the
        consumer and calls ``recreated``."""
        if upstream is None:
            return False  # unknown: no verdict either way
        if upstream <= position:
            self.progressed()  # idle (or past markers only), not stalled: clock starts again
            return False
        if not self.stalled:
            self.stalled_since_ms = now_ms() - int((self._clock() - self._progress_at) * 1000)
            self.stalls += 1
            self._acted_at = self._clock()
            log.warning("segment %s: stalled, no progress for %.0f s at offset %d while the "
                        "partition has offsets up to %d; its consumer is recreated if it stays "
                        "stuck", self.segment, self._clock() - self._progress_at, position,
                        upstream)  # fmt: skip
            return False
        return (self._clock() - self._acted_at) * 1000 >= self.check_ms

    def recreated(self) -> None:
        self.recoveries += 1
        self._acted_at = self._clock()
        log.info("segment %s: consumer recreated (%d since the segment started)", self.segment,
                 self.recoveries)  # fmt: skip
