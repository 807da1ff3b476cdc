"""MergeRollupTask on the controller: the next time buckets of each merge level to merge,
as Pinot's generator plans them (see tasks.generators.merge_rollup_levels for the rules).

Per table:
- the segments are read from ZooKeeper; those a segment lineage entry hides (the inputs of
  a COMPLETED replacement, the outputs of one IN_PROGRESS) and empty ones are left out, and
  a REALTIME table keeps only completed segments that start before its earliest consuming
  one;
- levels run from the shortest bucket up; a level with an unfinished subtask is skipped;
- the watermark ``watermarkMs_<level>`` (MINION_TASK_METADATA/<table>/MergeRollupTask)
  starts at the earliest segment start floored to the bucket and moves, when buckets are
  planned, to the first planned bucket's start. All levels' watermarks are written in one
  version-checked ZooKeeper write. A failed subtask leaves its inputs unmerged, so the
  next run plans the same bucket again;
- a partitioned table (``segmentPartitionConfig``) gets a subtask per partition per bucket,
  and one more for segments of several partitions; each subtask holds at most about
  ``maxNumRecordsPerTask`` rows.

Subtask configs use Pinot's keys; ``segmentNamePrefix`` is fixed here, so a retried
subtask writes the same segment names (its lineage entry replaces the earlier attempt's).
"""

from __future__ import annotations

import orjson
from kazoo.exceptions import BadVersionError, NodeExistsError

from engine.broker.pruning import recorded_partitions
from engine.clusterstate import ZNRecord, split_table_name
from engine.clusterstate.lineage import lineage_consistent_segments, read_lineage
from engine.clusterstate.segment_status import is_committed
from tasks.errors import GenerationError, TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, UPLOAD_URL_KEY, GenerationContext, TaskGenerator
from tasks.generators.merge_rollup_levels import (
    MERGE_LEVEL_KEY,
    TASK_TYPE,
    SegmentInfo,
    aggregation_types,
    cold_start_watermark,
    parse_levels,
    partition_groups,
    plan_buckets,
    segment_name_prefix,
    sort_segments,
    split_by_records,
    watermark_key,
)
from tasks.metadata import read_metadata, write_metadata

# Pinot's MinionConstants subtask config keys
SEGMENT_NAME_KEY = "segmentName"  # comma list
DOWNLOAD_URL_KEY = "downloadURL"  # comma list, in segmentName's order
MERGE_TYPE_KEY = "mergeType"
LEVEL_KEY = "mergeLevel"
PARTITION_BUCKET_KEY = "partitionBucketTimePeriod"
ROUND_BUCKET_KEY = "roundBucketTimePeriod"
MAX_RECORDS_KEY = "maxNumRecordsPerSegment"
ERASE_KEY = "eraseDimensionValues"
NAME_PREFIX_KEY = "segmentNamePrefix"
REPLACE_KEY = "enableReplaceSegments"
SHOULD_NOT_MERGE_KEY = "shouldNotMerge"  # in a segment's ZK custom.map


def _kind(table_config: dict, table_name: str) -> str:
    return split_table_name(table_name)[1] or str(table_config.get("tableType", "")).upper()


def check_table(table_config: dict, table_name: str) -> None:
    """Pinot merges APPEND OFFLINE tables and REALTIME tables without upsert or dedup."""
    from engine.spi import TableConfig

    if _kind(table_config, table_name) == "REALTIME":
        upsert = str((table_config.get("upsertConfig") or {}).get("mode", "NONE")).upper()
        dedup = (table_config.get("dedupConfig") or {}).get("dedupEnabled") in (True, "true")
        if upsert != "NONE" or dedup:
            raise TaskConfigError(TASK_TYPE, "a table with upsert or dedup enabled is not "
                                             "supported (use UpsertCompactionTask)")  # fmt: skip
        return
    push_type = TableConfig.from_json(table_config).push_type
    if push_type == "REFRESH":
        raise TaskConfigError(TASK_TYPE, "a REFRESH table is not supported (its pushes replace "
                                         "the segments a merge would replace)")  # fmt: skip


def _custom_map(metadata) -> dict:
    try:
        custom = orjson.loads(metadata.extra.get("custom.map") or "{}")
    except orjson.JSONDecodeError:
        return {}
    return custom if isinstance(custom, dict) else {}


def candidate_segments(ctx: GenerationContext, table_config: dict) -> list[SegmentInfo]:
    """The table's segments a merge may read, in Pinot's order (start, end, name)."""
    realtime = _kind(table_config, ctx.table_name) == "REALTIME"
    # the segments a query would read: not the inputs of a completed replacement, nor the
    # outputs of an unfinished or reverted one
    visible = lineage_consistent_segments(ctx.store.segment_names(ctx.table_name),
                                          read_lineage(ctx.store, ctx.table_name))  # fmt: skip
    metas = [m for m in (ctx.store.segment_metadata(ctx.table_name, name)
                         for name in sorted(visible)) if m is not None]  # fmt: skip
    consuming_start = None
    if realtime:
        starts = [m.start_time_ms for m in metas if not is_committed(m)
                  and m.total_docs > 0 and m.start_time_ms is not None]  # fmt: skip
        consuming_start = min(starts) if starts else None
    out = []
    for meta in metas:
        custom = _custom_map(meta)
        # Pinot's MergeTask.shouldNotMerge: another task holds the segment back
        if meta.total_docs <= 0 or str(custom.get(SHOULD_NOT_MERGE_KEY)).lower() == "true":
            continue
        start_ms, end_ms = meta.start_time_ms, meta.end_time_ms
        if start_ms is None or end_ms is None:
            continue
        if realtime and (not is_committed(meta) or (
                consuming_start is not None and start_ms >= consuming_start)):  # fmt: skip
            continue
        partitions, _ = recorded_partitions(meta.extra.get("segment.partition.metadata"),
                                            meta.segment_name)  # fmt: skip
        out.append(SegmentInfo(meta.segment_name, int(start_ms),
                               int(end_ms), custom.get(MERGE_LEVEL_KEY), meta.total_docs,
                               meta.download_url, partitions))  # fmt: skip
    return sort_segments(out)


def partition_columns(table_config: dict) -> list[str]:
    indexing = table_config.get("tableIndexConfig") or {}
    return sorted(((indexing.get("segmentPartitionConfig") or {})
                   .get("columnPartitionMap") or {}).keys())  # fmt: skip


class MergeRollupTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        check_table(table_config, str(table_config.get("tableName", "")))
        parse_levels(task_config)
        aggregation_types(task_config)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        self.validate({**table_config, "tableName": ctx.table_name}, task_config)
        levels = parse_levels(task_config)
        segments = candidate_segments(ctx, table_config)
        if not segments:
            return []
        busy = {c.get(LEVEL_KEY) for c in ctx.incomplete_subtask_configs()}
        record, version = read_metadata(ctx.store, ctx.table_name, TASK_TYPE)
        record = record or ZNRecord(id=ctx.table_name)
        before = dict(record.simple_fields)
        raw = split_table_name(ctx.table_name)[0]
        columns = partition_columns(table_config)
        passed = {k: v for k, v in task_config.items() if k.endswith(".aggregationType")}
        configs: list[dict[str, str]] = []
        lower = None
        for level in levels:
            if level.name in busy:
                lower = level
                continue
            key = watermark_key(level.name)
            if key in record.simple_fields:
                watermark = int(record.simple_fields[key])
            else:
                watermark = cold_start_watermark(segments[0].start_ms, level.bucket_ms)
            lower_watermark = record.simple_fields.get(watermark_key(lower.name)) if lower else None
            buckets = plan_buckets(segments, level, watermark, ctx.now_ms,
                                   int(lower_watermark) if lower_watermark else None,
                                   lowest=lower is None)  # fmt: skip
            lower = level
            if not buckets:
                continue
            first = buckets[0][0].start_ms
            record.simple_fields[key] = str(first // level.bucket_ms * level.bucket_ms)
            for bucket in buckets:
                for partition, group in partition_groups(bucket, columns):
                    runs = split_by_records(group, level.max_records_per_task)
                    for index, run in enumerate(runs):
                        configs.append({
                            TABLE_NAME_KEY: ctx.table_name,
                            SEGMENT_NAME_KEY: ",".join(s.name for s in run),
                            DOWNLOAD_URL_KEY: ",".join(s.download_url for s in run),
                            UPLOAD_URL_KEY: f"{ctx.controller_url}/segments",
                            REPLACE_KEY: "true",
                            MERGE_TYPE_KEY: level.merge_type,
                            LEVEL_KEY: level.name,
                            PARTITION_BUCKET_KEY: task_config[f"{level.name}.bucketTimePeriod"],
                            ROUND_BUCKET_KEY: task_config.get(f"{level.name}.roundBucketTimePeriod", ""),
                            MAX_RECORDS_KEY: str(level.max_records_per_segment),
                            ERASE_KEY: ",".join(level.erase_dimensions),
                            NAME_PREFIX_KEY: segment_name_prefix(level.name, ctx.now_ms, index,
                                                                 raw, partition),
                            **passed,
                        })  # fmt: skip
        if record.simple_fields != before:
            self._write_watermarks(ctx, record, version)
        return configs

    @staticmethod
    def _write_watermarks(ctx: GenerationContext, record: ZNRecord, version: int) -> None:
        try:
            write_metadata(ctx.store, ctx.table_name, TASK_TYPE, record, expected_version=version)
        except (BadVersionError, NodeExistsError):
            raise GenerationError(f"the {TASK_TYPE} watermarks of {ctx.table_name} changed "
                                  f"while planning; nothing was scheduled") from None  # fmt: skip
