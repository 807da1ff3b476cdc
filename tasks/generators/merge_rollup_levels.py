"""MergeRollupTask's planning rules, kept free of I/O so the generator (next to come) and its
tests share them: the level configs, bucket windows after a level's watermark, which
segments a window merges, and Pinot's output names.

Task config keys (all strings): ``<level>.mergeType`` (concat | rollup | dedup),
``<level>.bucketTimePeriod`` and ``<level>.bufferTimePeriod`` (required),
``<level>.roundBucketTimePeriod``, ``<level>.maxNumRecordsPerSegment`` (5M),
``<level>.maxNumRecordsPerTask`` (50M), ``<level>.maxNumParallelBuckets`` (1),
``<level>.eraseDimensionValues`` (comma list) and ``<metric>.aggregationType`` (sum | max |
min). A level is any token; levels run from the shortest bucket up.
"""

from __future__ import annotations

import dataclasses

from cluster.periods import period_ms
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


def plan_windows(level: LevelConfig, watermark_ms: int, now_ms: int,
                 lower_watermark_ms: int | None = None) -> list[tuple[int, int]]:  # fmt: skip
    """The next buckets ``[start, end)`` to merge, at most ``maxNumParallelBuckets``: each ends
    no later than now - buffer, and no later than the lower level's watermark (a level merges
    only what the level below has finished)."""
    windows = []
    start = watermark_ms
    while len(windows) < level.max_parallel_buckets:
        end = start + level.bucket_ms
        if end > now_ms - level.buffer_ms:
            break
        if lower_watermark_ms is not None and end > lower_watermark_ms:
            break
        windows.append((start, end))
        start = end
    return windows


@dataclasses.dataclass(frozen=True)
class SegmentInfo:
    name: str
    start_ms: int
    end_ms: int  # inclusive, as segment metadata has it
    merge_level: str | None = None


def select_segments(segments: list[SegmentInfo], window: tuple[int, int], level: str,
                    level_order: list[str]) -> list[str]:  # fmt: skip
    """The segments of the window to merge at ``level``: wholly inside ``[start, end)`` and
    not yet merged at this level or a higher one."""
    rank = {name: index for index, name in enumerate(level_order)}
    start, end = window
    chosen = []
    for segment in segments:
        if not (start <= segment.start_ms and segment.end_ms < end):
            continue
        merged = segment.merge_level
        if merged is not None and rank.get(merged, -1) >= rank[level]:
            continue
        chosen.append(segment.name)
    return sorted(chosen)


def output_segment_name(level: str, epoch_ms: int, index: int, raw_table: str,
                        partition: int | None = None) -> str:  # fmt: skip
    """Pinot's ``merged_<level>_<epochMs>[_<partition>]_<i>_<rawTable>``."""
    part = f"_{partition}" if partition is not None else ""
    return f"merged_{level}_{epoch_ms}{part}_{index}_{raw_table}"
