"""MergeRollupTask's planning rules, kept free of I/O so the generator and its
tests share them: the level configs, the buckets to merge after a level's watermark
(plan_buckets), their split by partition and by maxNumRecordsPerTask, and Pinot's output
name prefix.

Task config keys (all strings): ``<level>.mergeType`` (concat | rollup | dedup),
``<level>.bucketTimePeriod`` and ``<level>.bufferTimePeriod`` (required),
``<level>.roundBucketTimePeriod``, ``<level>.maxNumRecordsPerSegment`` (5M),
``<level>.maxNumRecordsPerTask`` (50M), ``<level>.maxNumParallelBuckets`` (1),
``<level>.eraseDimensionValues`` (comma list) and ``<metric>.aggregationType`` (sum | max |
min). A level is any token; levels run from the shortest bucket up.
"""

from __future__ import annotations

import dataclasses

from engine.spi.periods import period_ms
from tasks.errors import TaskConfigError

TASK_TYPE = "MergeRollupTask"
MERGE_TYPES = ("concat", "rollup", "dedup")
AGGREGATION_TYPES = ("sum", "max", "min")
LEVEL_KEYS = ("mergeType", "bucketTimePeriod", "bufferTimePeriod", "roundBucketTimePeriod",
              "maxNumRecordsPerSegment", "maxNumRecordsPerTask", "maxNumParallelBuckets",
              "eraseDimensionValues")  # fmt: skip
# the segment ZK custom.map keys a merged segment carries
MERGE_LEVEL_KEY = "MergeRollupTask.mergeLevel"
MERGE_TIME_KEY = "MergeRollupTask.time"


@dataclasses.dataclass(frozen=True)
class LevelConfig:
    name: str
    merge_type: str
    bucket_ms: int
    buffer_ms: int
    round_bucket_ms: int | None = None
    max_records_per_segment: int = 5_000_000
    max_records_per_task: int = 50_000_000
    max_parallel_buckets: int = 1
    erase_dimensions: tuple[str, ...] = ()


def _key(level: str, name: str) -> str:
    return f"{TASK_TYPE}.{level}.{name}"


def _period(config: dict[str, str], level: str, name: str, required: bool) -> int | None:
    raw = config.get(f"{level}.{name}")
    if raw is None or not raw.strip():
        if required:
            raise TaskConfigError(_key(level, name), "is required (e.g. 1d, 6h)")
        return None
    try:
        value = period_ms(raw)
    except ValueError as exc:
        raise TaskConfigError(_key(level, name), str(exc)) from None
    if value <= 0 and name != "bufferTimePeriod":
        raise TaskConfigError(_key(level, name), "must be longer than 0")
    return value


def _count(config: dict[str, str], level: str, name: str, default: int) -> int:
    raw = config.get(f"{level}.{name}")
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise TaskConfigError(_key(level, name), f"must be an integer, got {raw!r}") from None
    if value <= 0:
        raise TaskConfigError(_key(level, name), f"must be positive, got {value}")
    return value


def parse_levels(task_config: dict[str, str]) -> list[LevelConfig]:
    """The levels, shortest bucket first; TaskConfigError naming a wrong key."""
    names = sorted({key.rsplit(".", 1)[0] for key in task_config
                    if "." in key and key.rsplit(".", 1)[1] in LEVEL_KEYS})  # fmt: skip
    if not names:
        raise TaskConfigError(f"{TASK_TYPE}.<level>.bucketTimePeriod",
                              "no merge level is configured (e.g. 1day.bucketTimePeriod=1d)")  # fmt: skip
    levels = []
    for name in names:
        merge_type = task_config.get(f"{name}.mergeType", "concat").lower()
        if merge_type not in MERGE_TYPES:
            raise TaskConfigError(_key(name, "mergeType"),
                                  f"must be one of {', '.join(MERGE_TYPES)}, got {merge_type!r}")  # fmt: skip
        erase = task_config.get(f"{name}.eraseDimensionValues", "")
        levels.append(LevelConfig(
            name, merge_type,
            bucket_ms=_period(task_config, name, "bucketTimePeriod", True),
            buffer_ms=_period(task_config, name, "bufferTimePeriod", True),
            round_bucket_ms=_period(task_config, name, "roundBucketTimePeriod", False),
            max_records_per_segment=_count(task_config, name, "maxNumRecordsPerSegment",
                                           5_000_000),
            max_records_per_task=_count(task_config, name, "maxNumRecordsPerTask", 50_000_000),
            max_parallel_buckets=_count(task_config, name, "maxNumParallelBuckets", 1),
            erase_dimensions=tuple(c.strip() for c in erase.split(",") if c.strip()),
        ))  # fmt: skip
    return sorted(levels, key=lambda level: (level.bucket_ms, level.name))


def aggregation_types(task_config: dict[str, str]) -> dict[str, str]:
    """``{metric: sum|max|min}`` from the ``<metric>.aggregationType`` keys."""
    out = {}
    for key, value in task_config.items():
        if key.endswith(".aggregationType"):
            metric = key[: -len(".aggregationType")]
            kind = value.strip().lower()
            if kind not in AGGREGATION_TYPES:
                raise TaskConfigError(f"{TASK_TYPE}.{key}",
                                      f"must be one of {', '.join(AGGREGATION_TYPES)}, got {value!r}")  # fmt: skip
            out[metric] = kind
    return out


def watermark_key(level: str) -> str:
    return f"watermarkMs_{level}"


def cold_start_watermark(min_start_ms: int, bucket_ms: int) -> int:
    """The first watermark of a level: the earliest segment start, floored to the bucket."""
    return (min_start_ms // bucket_ms) * bucket_ms


@dataclasses.dataclass(frozen=True)
class SegmentInfo:
    """What planning needs of one segment's ZK metadata; times in epoch ms, end inclusive."""

    name: str
    start_ms: int
    end_ms: int
    merge_level: str | None = None
    total_docs: int = 1
    download_url: str = ""
    # partition column -> the partitions of its values (from segment.partition.metadata)
    partitions: dict[str, frozenset[int]] = dataclasses.field(default_factory=dict)


def sort_segments(segments: list[SegmentInfo]) -> list[SegmentInfo]:
    return sorted(segments, key=lambda s: (s.start_ms, s.end_ms, s.name))


def _merged_at(segment: SegmentInfo, level: str) -> bool:
    return (segment.merge_level or "").lower() == level.lower()


def _spills(segment: SegmentInfo, bucket_ms: int) -> bool:
    """The segment's rows span more than one bucket (the executor cuts it at bucket ends)."""
    return segment.start_ms // bucket_ms < segment.end_ms // bucket_ms


def plan_buckets(segments: list[SegmentInfo], level: LevelConfig, watermark_ms: int, now_ms: int,
                 lower_watermark_ms: int | None, lowest: bool) -> list[list[SegmentInfo]]:  # fmt: skip
    """The buckets to merge next at ``level``, each as the segments overlapping it, as Pinot
    plans them. ``segments`` are in sort_segments order.

    The first bucket starts at the watermark. A bucket may be merged only when it ends by
    now - buffer and, above the lowest level, by the lower level's watermark (a level merges
    only what the level below has finished). Buckets whose segments are all merged at this
    level already are skipped; at most ``maxNumParallelBuckets`` are returned, and none after
    one holding a segment that spills into the next bucket, since that bucket then gets part
    of its rows only when this merge is done."""
    bucket = level.bucket_ms

    def valid(end_ms: int) -> bool:
        if end_ms > now_ms - level.buffer_ms:
            return False
        return lowest or (lower_watermark_ms is not None and end_ms <= lower_watermark_ms)

    start = watermark_ms
    if not valid(start + bucket):
        return []
    buckets: list[list[SegmentInfo]] = []
    current: list[SegmentInfo] = []
    unmerged = spilled = False
    for segment in segments:
        if segment.start_ms < start + bucket:
            if segment.end_ms >= start:
                unmerged = unmerged or not _merged_at(segment, level.name)
                spilled = spilled or _spills(segment, bucket)
                current.append(segment)
            continue
        # past the current bucket: keep it if it has something to merge, then move on
        if unmerged:
            buckets.append(current)
        if len(buckets) == level.max_parallel_buckets or spilled:
            return buckets
        start = segment.start_ms // bucket * bucket
        current, unmerged = [], False
        if not valid(start + bucket):
            return buckets
        unmerged = not _merged_at(segment, level.name)
        spilled = _spills(segment, bucket)
        current.append(segment)
    if unmerged and (not buckets or buckets[-1] is not current):
        buckets.append(current)
    return buckets


def partition_groups(segments: list[SegmentInfo], partition_columns: list[str]
                     ) -> list[tuple[tuple[int, ...] | None, list[SegmentInfo]]]:  # fmt: skip
    """Split a bucket's segments by partition for a partitioned table: a segment whose every
    partition column (exactly the table's) holds one partition goes to that partition's
    group; the others (outliers) form one more group, keyed None."""
    if not partition_columns:
        return [(None, segments)]
    groups: dict[tuple[int, ...], list[SegmentInfo]] = {}
    outliers = []
    for segment in segments:
        parts = segment.partitions
        if set(parts) == set(partition_columns) and all(len(parts[c]) == 1
                                                         for c in partition_columns):  # fmt: skip
            key = tuple(next(iter(parts[c])) for c in partition_columns)
            groups.setdefault(key, []).append(segment)
        else:
            outliers.append(segment)
    out: list = sorted(groups.items())
    if outliers:
        out.append((None, outliers))
    return out


def split_by_records(segments: list[SegmentInfo], max_records: int) -> list[list[SegmentInfo]]:
    """Consecutive runs of segments, each closed once it holds ``max_records`` rows or more
    (Pinot's maxNumRecordsPerTask: one subtask per run)."""
    runs, run, count = [], [], 0
    for segment in segments:
        run.append(segment)
        count += segment.total_docs
        if count >= max_records:
            runs.append(run)
            run, count = [], 0
    if run:
        runs.append(run)
    return runs


def segment_name_prefix(level: str, epoch_ms: int, index: int, raw_table: str,
                        partition: tuple[int, ...] | None = None) -> str:  # fmt: skip
    """Pinot's ``merged_<level>_<epochMs>[_<partition>…]_<i>_<rawTable>``; the executor appends
    ``_<minTime>_<maxTime>_<seq>`` per output segment (see spark_jobs.minion.merge_rollup)."""
    part = "".join(f"_{p}" for p in partition or ())
    return f"merged_{level}_{epoch_ms}{part}_{index}_{raw_table}"
