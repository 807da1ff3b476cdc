"""The offset-lag rules, kept in one place for the CLI, the sampler and the evaluators."""

from __future__ import annotations


def offset_lag(committed: int | None, end_offset: int | None) -> int | None:
    """Messages the group has not yet consumed, as Kafka's kafka-consumer-groups prints it:
    `end_offset - committed`, not clamped.

    `committed` is the group's committed offset (the next offset it will read) and `end_offset`
    the partition's high watermark. Either may be None (no commit; end offset unknown), and then
    the lag is unknown (None), never 0. A negative committed offset is Kafka's "no offset"
    marker and is unknown too.
    """
    if committed is None or end_offset is None or committed < 0:
        return None
    return end_offset - committed


def monitored_lag(committed: int | None, end_offset: int | None) -> int | None:
    """`offset_lag` clamped at 0, as Burrow, KMinion and kafka-lag-exporter report it: a commit
    and an end offset are read at different moments, and a group may commit an offset past
    the end, so a negative difference means "caught up"."""
    lag = offset_lag(committed, end_offset)
    return None if lag is None else max(0, lag)


def total_lag(lags) -> int | None:
    """The sum of the known lags; None when no lag is known. Unknown lags are skipped, so one
    uncommitted partition does not hide the lag of the others."""
    known = [lag for lag in lags if lag is not None]
    return sum(known) if known else None
