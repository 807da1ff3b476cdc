"""RealtimeToOfflineSegmentsTask on the controller: the next window of a hybrid table's
REALTIME data to move into its OFFLINE table, as Pinot's generator plans it.

The watermark ``watermarkMs`` (MINION_TASK_METADATA/<table_REALTIME>/<Type>) starts at the
earliest completed segment's start, floored to ``bucketTimePeriod`` (written here at cold
start). The window is ``[watermark, watermark + bucket)`` and must end by now -
``bufferTimePeriod``; windows without data are skipped (Pinot #6988). Only committed (DONE
or UPLOADED) segments are read, and only once every partition's last completed segment
reaches the window's end (see plan_window). At most one task per table is unfinished at a time.

Pinot runs a window as one subtask. With ``splitByPartition`` true, each stream partition of
the window is its own subtask, so a large window runs in parallel; the watermark moves only
when every one of them has uploaded (see tasks.executors.realtime_to_offline).

Keys: ``bucketTimePeriod`` (1d), ``bufferTimePeriod`` (2d), ``roundBucketTimePeriod``,
``mergeType`` (or the legacy ``collectorType``; concat | rollup | dedup),
``<metric>.aggregationType`` (sum | max | min), ``maxNumRecordsPerSegment`` (5M),
``splitByPartition`` (false).
"""

from __future__ import annotations

from engine.clusterstate import ZNRecord, split_table_name
from engine.clusterstate.segment_status import is_committed
from engine.realtime.llc_name import LLCSegmentName
from engine.spi.periods import period_ms
from engine.spi.table_name import OFFLINE, table_name_with_type
from tasks.errors import TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, UPLOAD_URL_KEY, GenerationContext, TaskGenerator
from tasks.generators.merge_rollup_levels import AGGREGATION_TYPES, MERGE_TYPES
from tasks.metadata import read_metadata, write_metadata

TASK_TYPE = "RealtimeToOfflineSegmentsTask"
WATERMARK_KEY = "watermarkMs"
WINDOW_START_KEY = "windowStartMs"
WINDOW_END_KEY = "windowEndMs"
SEGMENT_NAME_KEY = "segmentName"  # comma list
DOWNLOAD_URL_KEY = "downloadURL"  # comma list, in segmentName's order
PARTITION_KEY = "partition"  # this subtask's stream partition, or "all"
PARTITIONS_KEY = "windowPartitions"  # comma list of every subtask's partition in the window
SPLIT_KEY = "splitByPartition"
DONE_PREFIX = "donePartitions_"  # metadata list field per window start: partitions uploaded
ALL = "all"
_PASSED_SUFFIX = ".aggregationType"
_PASSED = ("roundBucketTimePeriod", "maxNumRecordsPerSegment")


def _period(config: dict[str, str], key: str, default: str | None) -> int | None:
    raw = config.get(key) or default
    if raw is None:
        return None
    try:
        value = period_ms(raw)
    except ValueError as exc:
        raise TaskConfigError(f"{TASK_TYPE}.{key}", str(exc)) from None
    if value < 0 or (value == 0 and key != "bufferTimePeriod"):
        raise TaskConfigError(f"{TASK_TYPE}.{key}", "must be longer than 0")
    return value


def merge_type(config: dict[str, str]) -> str:
    kind = (config.get("mergeType") or config.get("collectorType") or "concat").lower()
    if kind not in MERGE_TYPES:
        raise TaskConfigError(f"{TASK_TYPE}.mergeType",
                              f"must be one of {', '.join(MERGE_TYPES)}, got {kind!r}")  # fmt: skip
    return kind


def check_config(config: dict[str, str]) -> tuple[int, int]:
    """(bucket ms, buffer ms); raises TaskConfigError naming a wrong key."""
    bucket = _period(config, "bucketTimePeriod", "1d")
    buffer = _period(config, "bufferTimePeriod", "2d")
    _period(config, "roundBucketTimePeriod", None)
    merge_type(config)
    for key, value in config.items():
        if key.endswith(_PASSED_SUFFIX) and value.lower() not in AGGREGATION_TYPES:
            raise TaskConfigError(f"{TASK_TYPE}.{key}",
                                  f"must be one of {', '.join(AGGREGATION_TYPES)}")  # fmt: skip
    raw = config.get("maxNumRecordsPerSegment")
    if raw is not None and (not raw.strip().isdigit() or int(raw) <= 0):
        raise TaskConfigError(f"{TASK_TYPE}.maxNumRecordsPerSegment", "must be a positive integer")
    if config.get(SPLIT_KEY, "false").lower() not in ("true", "false"):
        raise TaskConfigError(f"{TASK_TYPE}.{SPLIT_KEY}", "must be true or false")
    return bucket, buffer


def check_bucket_fits_boundary(bucket_ms: int, offline_config: dict) -> None:
    """The broker's time boundary is the OFFLINE side's newest end minus one push period, so
    while a window's segments upload one by one it stays inside the previous (complete)
    windows only if a window is no longer than that period."""
    from engine.spi import TableConfig

    period = TableConfig.from_json(offline_config).push_frequency_ms
    if bucket_ms > period:
        raise TaskConfigError(f"{TASK_TYPE}.bucketTimePeriod",
                              f"{bucket_ms} ms is longer than the OFFLINE table's push period "
                              f"({period} ms, segmentsConfig.segmentPushFrequency): hybrid "
                              f"queries would miss rows while a window uploads")  # fmt: skip


def completed_segments(ctx: GenerationContext) -> list[tuple[int, int, int, int, str, str]]:
    """(partition, sequence, start ms, end ms, name, download URL) of every committed (DONE
    or UPLOADED) LLC segment with a time range."""
    out = []
    for name in ctx.store.segment_names(ctx.table_name):
        llc = LLCSegmentName.parse(name)
        meta = ctx.store.segment_metadata(ctx.table_name, name)
        if llc is None or meta is None or not is_committed(meta):
            continue
        start_ms, end_ms = meta.start_time_ms, meta.end_time_ms
        if start_ms is None or end_ms is None or meta.total_docs <= 0:
            continue
        out.append((llc.partition, llc.sequence, int(start_ms), int(end_ms), name,
                    meta.download_url))  # fmt: skip
    return sorted(out)


def plan_window(segments, watermark: int, bucket: int, limit: int):
    """(window start, the segments overlapping it) of the first window from ``watermark``
    holding data and ending by ``limit``; None when there is none yet.

    Every partition's last completed segment must reach the window's end: otherwise that
    partition's CONSUMING segment may hold rows of the window, which would be left behind
    once the OFFLINE table answers for the window (Pinot checks only the partitions whose
    last completed segment overlaps the window)."""
    last = {}
    for segment in segments:  # sorted by partition, sequence: the last one wins
        last[segment[0]] = segment
    start = watermark
    while start + bucket <= limit:
        end = start + bucket
        if any(segment[3] < end for segment in last.values()):
            return None
        overlapping = [s for s in segments if s[2] < end and s[3] >= start]
        if overlapping:
            return start, overlapping
        start = end  # no data in this window (Pinot #6988: do not stall on a gap)
    return None


class RealtimeToOfflineSegmentsTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        name = str(table_config.get("tableName", ""))
        kind = split_table_name(name)[1] or str(table_config.get("tableType", "")).upper()
        if kind != "REALTIME":
            raise TaskConfigError(TASK_TYPE, "runs on REALTIME tables only")
        check_config(task_config)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        self.validate({**table_config, "tableName": ctx.table_name}, task_config)
        bucket, buffer = check_config(task_config)
        raw = split_table_name(ctx.table_name)[0]
        offline = ctx.store.table_config(table_name_with_type(raw, OFFLINE))
        if offline is None:
            raise TaskConfigError(TASK_TYPE, f"table {raw} has no OFFLINE table to move data to")
        check_bucket_fits_boundary(bucket, offline)
        if ctx.incomplete_subtask_configs():
            return []  # one window at a time: the watermark moves when it is done
        segments = completed_segments(ctx)
        if not segments:
            return []
        record, _ = read_metadata(ctx.store, ctx.table_name, TASK_TYPE)
        if record is None or WATERMARK_KEY not in record.simple_fields:
            watermark = min(s[2] for s in segments) // bucket * bucket
            record = record or ZNRecord(id=ctx.table_name)
            record.simple_fields[WATERMARK_KEY] = str(watermark)
            write_metadata(ctx.store, ctx.table_name, TASK_TYPE, record)
        watermark = int(record.simple_fields[WATERMARK_KEY])
        planned = plan_window(segments, watermark, bucket, ctx.now_ms - buffer)
        if planned is None:
            return []
        start, overlapping = planned
        split = task_config.get(SPLIT_KEY, "false").lower() == "true"
        groups: dict[str, list] = {}
        for segment in overlapping:
            groups.setdefault(str(segment[0]) if split else ALL, []).append(segment)
        passed = {k: v for k, v in task_config.items()
                  if k in _PASSED or k.endswith(_PASSED_SUFFIX)}  # fmt: skip
        # partitions of this window a failed earlier task uploaded already need not run again
        done = set(record.list_fields.get(f"{DONE_PREFIX}{start}", []))
        return [
            {TABLE_NAME_KEY: ctx.table_name, WINDOW_START_KEY: str(start),
             WINDOW_END_KEY: str(start + bucket), PARTITION_KEY: key,
             PARTITIONS_KEY: ",".join(groups), "mergeType": merge_type(task_config),
             SEGMENT_NAME_KEY: ",".join(s[4] for s in group),
             DOWNLOAD_URL_KEY: ",".join(s[5] for s in group),
             UPLOAD_URL_KEY: f"{ctx.controller_url}/segments", **passed}
            for key, group in groups.items() if key not in done
        ]  # fmt: skip
