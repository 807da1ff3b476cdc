"""Time lag: how many seconds behind the log end a consumer is, estimated as kafka-lag-exporter
does, by interpolating the partition's end offsets over time.

The table keeps (end offset, time) points from successive polls. To find when offset `o` was
the end of the log it takes the newest adjacent pair of points around `o` (or the oldest and
newest, to extrapolate) and interpolates linearly.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    offset: int
    timestamp_ms: float


class EndOffsetTable:
    """At most `capacity` points (60 by default), oldest dropped first."""

    def __init__(self, capacity: int = 60) -> None:
        if capacity < 2:
            raise ValueError(f"an end-offset table needs room for 2 points, got {capacity}")
        self.points: deque[Point] = deque(maxlen=capacity)

    def add(self, offset: int, timestamp_ms: float) -> bool:
        """Adds a poll's end offset. Points older than the newest, or with a lower offset, are
        rejected (False). While the log does not move, the newest point slides forward in time
        instead of piling up, so a flat stretch is kept as its first and last points."""
        point = Point(offset, timestamp_ms)
        if self.points:
            last = self.points[-1]
            if timestamp_ms < last.timestamp_ms or offset < last.offset:
                return False
            if len(self.points) >= 2 and self.points[-2].offset == last.offset == offset:
                self.points[-1] = point
                return True
        self.points.append(point)
        return True

    def lookup_time(self, offset: int) -> float | None:
        """Estimated time (ms) when `offset` was the end of the log; None with fewer than two
        points. On a flat table the estimate is -inf (before) or +inf (after the flat offset)."""
        points = self.points
        if points and points[-1].offset == offset:
            return points[-1].timestamp_ms
        if len(points) < 2:
            return None
        left, right = points[0], points[-1]
        for i in range(len(points) - 1, 0, -1):
            if points[i - 1].offset <= offset <= points[i].offset:
                left, right = points[i - 1], points[i]
                break
        span = right.offset - left.offset
        if span == 0:
            return -math.inf if offset < right.offset else math.inf
        return (
            right.timestamp_ms
            - (right.offset - offset) * (right.timestamp_ms - left.timestamp_ms) / span
        )

    def time_lag_s(self, committed: int | None, now_ms: float) -> float | None:
        """Seconds between now and when the committed offset was the log end. 0 when caught up
        (or ahead); None when unknown (no commit, or fewer than two points), never NaN. When the
        log did not move within the table, the estimate is the table's age, a lower bound,
        rather than infinity."""
        if committed is None or committed < 0 or not self.points:
            return None
        if committed >= self.points[-1].offset:
            return 0.0
        estimate = self.lookup_time(committed)
        if estimate is None:
            return None
        if estimate == -math.inf:
            estimate = self.points[0].timestamp_ms
        return max(0.0, (now_ms - estimate) / 1000)
