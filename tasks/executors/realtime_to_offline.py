"""RealtimeToOfflineSegmentsTask on a minion: move one window (or one partition's share of
it) of a hybrid table's completed REALTIME segments into its OFFLINE table.

Order matters for exact hybrid answers and safe retries (Pinot #14659 is this race):
1. the watermark must still be the window's start, else the window is done or another run
   moved it, and nothing is uploaded;
2. the output segments are uploaded under names fixed by window and partition, so a retry
   replaces its own output; a refused upload fails the subtask before anything moves;
3. only then is the subtask recorded as done in the task metadata, and the one that finds
   every partition of the window done moves ``watermarkMs`` to the window's end, all in one
   ZooKeeper write checked against the version it read.
The broker's time boundary (the OFFLINE side answers up to its newest end minus a push
period) stays inside the previous, complete windows meanwhile.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from engine.clusterstate import ConcurrentUpdateError, ZNRecord, split_table_name
from engine.spi.periods import period_ms
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.executors.purge import controller_of, fetch_segment, table_objects, upload
from tasks.generators.base import UPLOAD_URL_KEY
from tasks.generators.realtime_to_offline import (
    DONE_PREFIX,
    DOWNLOAD_URL_KEY,
    PARTITION_KEY,
    PARTITIONS_KEY,
    SEGMENT_NAME_KEY,
    TASK_TYPE,
    WATERMARK_KEY,
    WINDOW_END_KEY,
    WINDOW_START_KEY,
)
from tasks.metadata import metadata_path, read_metadata


def _watermark(record: ZNRecord | None) -> int | None:
    if record is None or WATERMARK_KEY not in record.simple_fields:
        return None
    return int(record.simple_fields[WATERMARK_KEY])


def _moved(watermark: int | None, start: int) -> bool:
    """The window was done already. A watermark before the start is fine: the generator
    skipped empty windows in between."""
    return watermark is None or watermark > start


def check_window(store, table: str, start: int) -> None:
    watermark = _watermark(read_metadata(store, table, TASK_TYPE)[0])
    if _moved(watermark, start):
        raise SubtaskFailedError(f"the watermark of {table} is {watermark}, past the window "
                                 f"start {start}: the window was moved already")  # fmt: skip


def finish_window(store, table: str, start: int, end: int, partition: str,
                  partitions: list[str]) -> bool:  # fmt: skip
    """Record ``partition`` as done; the write that completes the window moves the
    watermark to ``end``. True when this call moved it. One compare-and-set on the metadata
    znode (ClusterStore.update), retried when another partition's subtask wrote first."""
    moved = False

    def change(record: ZNRecord | None) -> ZNRecord:
        nonlocal moved
        if record is None:  # not at the current path: Pinot's older layout, or nothing
            record = read_metadata(store, table, TASK_TYPE)[0]
        if _moved(_watermark(record), start):
            raise SubtaskFailedError(f"the watermark of {table} moved past the window start "
                                     f"{start} (to {_watermark(record)}) while it ran")  # fmt: skip
        key = f"{DONE_PREFIX}{start}"
        done = set(record.list_fields.get(key, [])) | {partition}
        moved = done >= set(partitions)
        if moved:
            record.simple_fields[WATERMARK_KEY] = str(end)
            record.list_fields.pop(key, None)
        else:
            record.list_fields[key] = sorted(done)
        return record

    try:
        store.update(metadata_path(store, table, TASK_TYPE), change)
    except ConcurrentUpdateError as exc:
        raise SubtaskFailedError(f"could not update the task metadata of {table}: {exc}") from None
    return moved


class RealtimeToOfflineSegmentsTaskExecutor(TaskExecutor):
    task_type = TASK_TYPE

    def execute(self, ctx: SubtaskContext) -> dict:
        from controller.zk import get_store
        from spark_jobs.minion.merge_rollup import spec_for_table
        from spark_jobs.minion.realtime_to_offline import move_window, segment_name
        from spark_jobs.minion.session import minion_spark

        configs = ctx.configs
        store = get_store()
        table = ctx.table_name
        raw = split_table_name(table)[0]
        start, end = int(configs[WINDOW_START_KEY]), int(configs[WINDOW_END_KEY])
        partition = configs[PARTITION_KEY]
        check_window(store, table, start)
        controller = controller_of(configs[UPLOAD_URL_KEY])
        schema, offline_config = table_objects(controller, raw, "OFFLINE")
        aggregations = {k.removesuffix(".aggregationType"): v.lower()
                        for k, v in configs.items() if k.endswith(".aggregationType")}  # fmt: skip
        round_ms = configs.get("roundBucketTimePeriod")
        if round_ms:
            round_ms = period_ms(round_ms)
        spec = spec_for_table(schema, offline_config, merge_type=configs.get("mergeType", "concat"),
                              round_bucket_ms=round_ms or None, aggregations=aggregations,
                              max_records_per_segment=int(configs.get("maxNumRecordsPerSegment",
                                                                      "5000000")))  # fmt: skip
        names = configs[SEGMENT_NAME_KEY].split(",")
        urls = configs[DOWNLOAD_URL_KEY].split(",")
        work = Path(tempfile.mkdtemp(prefix="sprig-rto-"))
        try:
            dirs = []
            for i, (name, url) in enumerate(zip(names, urls, strict=True)):
                ctx.report_progress(f"downloading segment {name}")
                dirs.append(fetch_segment(url, work / f"in{i}", "REALTIME"))
            ctx.report_progress(f"moving window [{start}, {end}) of partition {partition}")
            built = move_window(minion_spark(), dirs, schema, offline_config, spec, start, end,
                                work / "out",
                                lambda i: segment_name(raw, start, end, partition, i))  # fmt: skip
            for result in built:
                ctx.report_progress(f"uploading segment {result.name}")
                upload(controller, raw, "OFFLINE", result.path, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        moved = finish_window(store, table, start, end, partition,
                              configs[PARTITIONS_KEY].split(","))  # fmt: skip
        return {"windowStartMs": start, "windowEndMs": end, "partition": partition,
                "segments": [r.name for r in built], "numRecords": sum(r.num_rows for r in built),
                "watermarkMoved": moved}  # fmt: skip
