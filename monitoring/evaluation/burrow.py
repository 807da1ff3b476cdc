"""Burrow's consumer status rules over a sliding window of commits (its caching evaluator).

Times are epoch milliseconds. A partition's window holds its last `intervals` commits, oldest
first; each carries the lag at commit time (None when the end offset was not known then).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import pairwise


class Status(IntEnum):
    """Burrow's status codes; a larger code is worse."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class Commit:
    offset: int
    timestamp_ms: int  # when the commit was made (or first seen)
    lag: int | None  # max(0, end offset - offset) at commit time; None = end offset unknown
    observed_at_ms: int | None = None


@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    partition: int
    status: Status
    complete: float
    current_lag: int
    start: Commit | None
    end: Commit | None


@dataclass(frozen=True)
class GroupStatus:
    group: str
    status: Status  # OK, WARN or ERR (STOP, STALL and REWIND count as ERR), NOTFOUND
    complete: float
    partitions: tuple[PartitionStatus, ...]
    partition_count: int
    maxlag: PartitionStatus | None
    totallag: int


def partition_status(
    commits: Sequence[Commit],
    broker_offsets: Sequence[int],
    current_lag: int,
    now_ms: int,
    allowed_lag: int = 0,
) -> Status:
    """The rules in Burrow's order. Nothing is wrong while the current lag is within
    `allowed_lag`. STOP comes first (a consumer that was once caught up can still stop),
    unless a recent end offset shows it was caught up; then an unrecovered REWIND; then, only
    if the lag was never within `allowed_lag` in the window, STALL and WARN."""
    if current_lag <= allowed_lag or not commits:
        return Status.OK
    if stopped(commits, now_ms) and not recent_lag_zero(commits, broker_offsets):
        return Status.STOP
    index = rewind_index(commits)
    if index >= 0 and not rewind_recovered(commits, index):
        return Status.REWIND
    if lag_always_above(commits, allowed_lag):
        if stalled(commits):
            return Status.STALL
        if lag_not_decreasing(commits):
            return Status.WARN
    return Status.OK


def stopped(commits: Sequence[Commit], now_ms: int) -> bool:
    """The time since the last commit is greater (strictly) than the window's span."""
    first, last = commits[0].timestamp_ms, commits[-1].timestamp_ms
    return now_ms - last > last - first


def recent_lag_zero(commits: Sequence[Commit], broker_offsets: Sequence[int]) -> bool:
    """Some recently sampled end offset was at or below the last committed offset."""
    last = commits[-1].offset
    return any(end <= last for end in broker_offsets)


def rewind_index(commits: Sequence[Commit]) -> int:
    """Index of the first commit lower than the one before it, or -1."""
    for i in range(1, len(commits)):
        if commits[i].offset < commits[i - 1].offset:
            return i
    return -1


def rewind_recovered(commits: Sequence[Commit], index: int) -> bool:
    """A commit after the rewind reached the offset from before it (a rebalance replaying a
    little is not held against the consumer)."""
    before = commits[index - 1].offset
    return any(c.offset >= before for c in commits[index + 1 :])


def lag_always_above(commits: Sequence[Commit], allowed_lag: int) -> bool:
    return all(c.lag is None or c.lag > allowed_lag for c in commits)


def stalled(commits: Sequence[Commit]) -> bool:
    return all(c.offset == commits[0].offset for c in commits)


def lag_not_decreasing(commits: Sequence[Commit]) -> bool:
    lags = [c.lag for c in commits if c.lag is not None]
    return all(b >= a for a, b in pairwise(lags))


def evaluate_partition(
    topic: str,
    partition: int,
    window: Sequence[Commit | None],
    broker_offsets: Sequence[int],
    current_lag: int,
    now_ms: int,
    allowed_lag: int = 0,
    minimum_complete: float = 0.0,
) -> PartitionStatus:
    """`window` is the ring of `intervals` slots, empty (None) slots first while it fills.
    `complete` is the filled fraction; below `minimum_complete` the rules are not run."""
    commits = [c for c in window if c is not None]
    complete = len(commits) / len(window) if window else 0.0
    status = Status.OK
    if commits and complete >= minimum_complete:
        status = partition_status(commits, broker_offsets, current_lag, now_ms, allowed_lag)
    return PartitionStatus(
        topic, partition, status, complete, current_lag,
        commits[0] if commits else None, commits[-1] if commits else None,
    )  # fmt: skip


def group_status(group: str, partitions: Sequence[PartitionStatus] | None) -> GroupStatus:
    """The worst partition decides (STOP, STALL and REWIND reported as ERR); None (the group is
    not known) is NOTFOUND. `complete` is the share of partitions with a full window."""
    if partitions is None:
        return GroupStatus(group, Status.NOTFOUND, 0.0, (), 0, None, 0)
    status = Status.OK
    maxlag = None
    for p in partitions:
        status = max(status, min(p.status, Status.ERR))
        if maxlag is None or p.current_lag > maxlag.current_lag:
            maxlag = p
    full = sum(1 for p in partitions if p.complete == 1.0)
    return GroupStatus(
        group=group,
        status=Status(status),
        complete=full / len(partitions) if partitions else 0.0,
        partitions=tuple(partitions),
        partition_count=len(partitions),
        maxlag=maxlag,
        totallag=sum(p.current_lag for p in partitions),
    )
