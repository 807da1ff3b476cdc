"""Burrow windows built from lag samples.

A sample is what one poll (or one decoded commit) tells about a partition: the group's
committed offset, the partition's end offset and when. Burrow keeps commits, not polls, so a
sample opens a new commit slot only when the commit changed: a new commit timestamp when the
source knows it (the `__consumer_offsets` path), else a new offset (the AdminClient path, which
cannot see a consumer re-committing the same offset; such a consumer shows as STOP, not STALL).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from monitoring.evaluation.burrow import Commit, PartitionStatus, evaluate_partition
from monitoring.lag import monitored_lag


@dataclass(frozen=True)
class Sample:
    timestamp_ms: int
    committed: int | None  # the next offset the group will read; None = no commit
    end_offset: int | None  # the high watermark; None = unknown
    commit_timestamp_ms: int | None = None  # when the broker stored the commit, if known

    @classmethod
    def from_record(cls, record: dict) -> Sample:
        """A sample from one JSON record of the `consumer_offsets` topic/table. The collector's
        `commitTimestamp` is its poll time; a decoded commit's is the real commit time."""
        stamp = record["commitTimestamp"]
        from_commit = record.get("source") != "collector"
        return cls(
            timestamp_ms=stamp,
            committed=record.get("offset"),
            end_offset=record.get("logEndOffset"),
            commit_timestamp_ms=stamp if from_commit else None,
        )


@dataclass(frozen=True)
class WindowConfig:
    """Burrow's evaluator settings. `min_distance_ms`: a commit this close to the previous one
    replaces it. `expire_ms`: commits older than this are dropped (7 days)."""

    intervals: int = 10
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    min_distance_ms: int = 1_000
    expire_ms: int = 7 * 24 * 3600 * 1000

    def __post_init__(self) -> None:
        if self.intervals < 1:
            raise ValueError(f"intervals must be at least 1, got {self.intervals}")
        if self.allowed_lag < 0:
            raise ValueError(f"allowed_lag must not be negative, got {self.allowed_lag}")


@dataclass(frozen=True)
class PartitionWindow:
    slots: tuple[Commit | None, ...]  # `intervals` long, empty slots first
    broker_offsets: tuple[int, ...]  # the last `intervals` end offsets, oldest first
    current_lag: int | None  # None when the group has no commit here


def build_window(samples: Iterable[Sample], now_ms: int, config: WindowConfig) -> PartitionWindow:
    """Samples taken after `now_ms` are ignored, so a window can be rebuilt as of any moment."""
    ordered = sorted((s for s in samples if s.timestamp_ms <= now_ms), key=lambda s: s.timestamp_ms)
    commits: list[Commit] = []
    last_seen: Sample | None = None
    for sample in ordered:
        if sample.committed is None or sample.committed < 0:
            continue
        if last_seen is None or _new_commit(last_seen, sample):
            commit = Commit(
                offset=sample.committed,
                timestamp_ms=sample.timestamp_ms
                if sample.commit_timestamp_ms is None
                else sample.commit_timestamp_ms,
                lag=monitored_lag(sample.committed, sample.end_offset),
                observed_at_ms=sample.timestamp_ms,
            )
            if commits and commit.timestamp_ms - commits[-1].timestamp_ms < config.min_distance_ms:
                commits[-1] = commit
            else:
                commits.append(commit)
        last_seen = sample
    commits = [c for c in commits if now_ms - c.timestamp_ms <= config.expire_ms]
    commits = commits[-config.intervals :]
    ends = tuple(s.end_offset for s in ordered if s.end_offset is not None)[-config.intervals :]
    latest = ordered[-1] if ordered else None
    current = None
    if commits and latest is not None:
        end = latest.end_offset if latest.end_offset is not None else (ends[-1] if ends else None)
        current = monitored_lag(commits[-1].offset, end)
    slots = (None,) * (config.intervals - len(commits)) + tuple(commits)
    return PartitionWindow(slots, ends, current)


def _new_commit(previous: Sample, sample: Sample) -> bool:
    if sample.commit_timestamp_ms is not None:
        return sample.commit_timestamp_ms != previous.commit_timestamp_ms
    return sample.committed != previous.committed


def evaluate_samples(
    topic: str, partition: int, samples: Sequence[Sample], now_ms: int, config: WindowConfig
) -> PartitionStatus | None:
    """Burrow's status of one partition as of `now_ms`; None when the group never committed
    there (its lag is unknown, which is neither OK nor 0)."""
    window = build_window(samples, now_ms, config)
    if window.current_lag is None:
        return None
    return evaluate_partition(
        topic, partition, window.slots, window.broker_offsets, window.current_lag, now_ms,
        config.allowed_lag, config.minimum_complete,
    )  # fmt: skip
