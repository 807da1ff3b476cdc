"""The offset-lag rule, kept in one place for the CLI, the sampler and the evaluators."""

from __future__ import annotations


def offset_lag(committed: int | None, end_offset: int | None) -> int | None:
    """Messages the group has not yet consumed: `end_offset - committed`.

    `committed` is the group's committed offset (the next offset it will read) and `end_offset`
    the partition's high watermark. Either may be None (no commit; end offset unknown), and then
    the lag is unknown (None), never 0. A negative committed offset is Kafka's "no offset"
    marker and is unknown too. The result is clamped at 0 because commits and end offsets are
    read at different moments (and some brokers report a low high watermark), as Burrow,
    KMinion and kafka-lag-exporter do.
    """
    if committed is None or end_offset is None or committed < 0:
        return None
    return max(0, end_offset - committed)


def total_lag(lags) -> int | None:
    """The sum of the known lags; None when no lag is known. Unknown lags are skipped, so one
    uncommitted partition does not hide the lag of the others."""
    known = [lag for lag in lags if lag is not None]
    return sum(known) if known else None
