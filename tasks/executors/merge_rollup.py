"""MergeRollupTask on a minion: merge (concat, roll up or dedup) one bucket's segments on the
worker's SparkSession into new segments and swap them in with segment lineage.

1. every input segment must still be in the table, else the bucket was merged or changed
   meanwhile and nothing is done;
2. the inputs are downloaded, merged per time bucket (``partitionBucketTimePeriod``) and
   partition, and written through the engine's writer under Pinot's names, which the
   generator fixed (``segmentNamePrefix``), so a retry builds the same names;
3. ``startReplaceSegments`` (inputs -> outputs, forceCleanup so a retry's entry replaces an
   earlier attempt's) hides the outputs from queries while they upload;
4. each output is uploaded; ``endReplaceSegments`` then switches queries from the inputs to
   the outputs in one step, so no query counts a row twice or misses one.
Anything failing after step 3 reverts the lineage entry, leaving the table answering from
its inputs, and fails the subtask (a refused upload too, Pinot PR #18813).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

import requests

from engine.clusterstate import split_table_name
from engine.common.clock import now_ms
from engine.spi.periods import period_ms
from spark_jobs.ingestion.table_source import controller_message
from tasks.controller_auth import task_headers
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.executors.purge import controller_of, fetch_segment, table_objects, upload
from tasks.generators.base import UPLOAD_URL_KEY
from tasks.generators.merge_rollup import (
    DOWNLOAD_URL_KEY,
    ERASE_KEY,
    LEVEL_KEY,
    MAX_RECORDS_KEY,
    MERGE_TYPE_KEY,
    NAME_PREFIX_KEY,
    PARTITION_BUCKET_KEY,
    ROUND_BUCKET_KEY,
    SEGMENT_NAME_KEY,
)
from tasks.generators.merge_rollup_levels import MERGE_LEVEL_KEY, MERGE_TIME_KEY, TASK_TYPE
from tasks.lineage_client import (
    end_replace_segments,
    revert_replace_segments,
    segment_lineage,
    start_replace_segments,
)

log = logging.getLogger(__name__)


# --- the subtask ---------------------------------------------------------------------------


def check_inputs_present(controller: str, raw: str, kind: str, names: list[str]) -> None:
    try:
        response = requests.get(f"{controller}/segments/{raw}", params={"type": kind},
                                headers=task_headers(), timeout=60)  # fmt: skip
    except requests.RequestException as exc:
        raise SubtaskFailedError(f"listing the segments of {raw}_{kind}: {exc}") from exc
    if response.status_code >= 300:
        raise SubtaskFailedError(f"listing the segments of {raw}_{kind} failed: HTTP "
                                 f"{response.status_code} {controller_message(response)}")  # fmt: skip
    present = {s for entry in response.json() for s in entry.get(kind, [])}
    missing = sorted(set(names) - present)
    if missing:
        raise SubtaskFailedError(f"table {raw}_{kind} no longer has the segments to merge: "
                                 f"{', '.join(missing)}")  # fmt: skip


def finished_replacement(controller: str, raw: str, kind: str, inputs: list[str],
                         prefix: str) -> list[str] | None:  # fmt: skip
    """The outputs of a COMPLETED replacement of exactly ``inputs`` by segments of this
    subtask's ``prefix`` (an earlier attempt that died after ending it), else None. Inputs
    another finished replacement took are an error: merging them again would count their
    rows twice (the replaced segments stay in the table until retention deletes them)."""
    entries = segment_lineage(controller, raw, kind).get("lineageEntries") or {}
    for entry_id, entry in entries.items():
        taken = set(entry.get("segmentsFrom") or []) & set(inputs)
        if entry.get("state") != "COMPLETED" or not taken:
            continue
        outputs = list(entry.get("segmentsTo") or [])
        if set(entry["segmentsFrom"]) == set(inputs) and all(o.startswith(f"{prefix}_")
                                                             for o in outputs):  # fmt: skip
            return outputs
        raise SubtaskFailedError(f"segments {', '.join(sorted(taken))} of {raw}_{kind} were "
                                 f"replaced already (lineage entry {entry_id})")  # fmt: skip
    return None


def merge_spec(configs: dict[str, str], schema, table_config):
    from spark_jobs.minion.merge_rollup import spec_for_table

    aggregations = {k.removesuffix(".aggregationType"): v.lower()
                    for k, v in configs.items() if k.endswith(".aggregationType")}  # fmt: skip
    round_raw = configs.get(ROUND_BUCKET_KEY) or ""
    erase = tuple(c for c in (configs.get(ERASE_KEY) or "").split(",") if c)
    return spec_for_table(schema, table_config, merge_type=configs.get(MERGE_TYPE_KEY) or "concat",
                          round_bucket_ms=period_ms(round_raw) if round_raw else None,
                          erase=erase, aggregations=aggregations,
                          max_records_per_segment=int(configs.get(MAX_RECORDS_KEY) or 5_000_000))  # fmt: skip


class MergeRollupTaskExecutor(TaskExecutor):
    task_type = TASK_TYPE

    def execute(self, ctx: SubtaskContext) -> dict:
        from spark_jobs.minion.merge_rollup import merge_segments
        from spark_jobs.minion.session import minion_spark

        configs = ctx.configs
        controller = controller_of(configs[UPLOAD_URL_KEY])
        raw, kind = split_table_name(ctx.table_name)
        kind = kind or "OFFLINE"
        names = configs[SEGMENT_NAME_KEY].split(",")
        urls = configs[DOWNLOAD_URL_KEY].split(",")
        check_inputs_present(controller, raw, kind, names)
        done = finished_replacement(controller, raw, kind, names, configs[NAME_PREFIX_KEY])
        if done is not None:
            return {"mergeLevel": configs[LEVEL_KEY], "segmentsFrom": names,
                    "segmentsTo": done, "alreadyReplaced": True}  # fmt: skip
        ctx.report_progress("reading the schema and table config")
        schema, table_config = table_objects(controller, raw, kind)
        spec = merge_spec(configs, schema, table_config)
        bucket = configs.get(PARTITION_BUCKET_KEY)
        custom = {MERGE_LEVEL_KEY: configs[LEVEL_KEY], MERGE_TIME_KEY: str(now_ms())}
        work = Path(tempfile.mkdtemp(prefix="sprig-merge-"))
        try:
            dirs = []
            for i, (name, url) in enumerate(zip(names, urls, strict=True)):
                ctx.report_progress(f"downloading segment {name} ({i + 1} of {len(names)})")
                dirs.append(fetch_segment(url, work / f"in{i}", kind, controller))
            ctx.report_progress(f"merging {len(dirs)} segments ({spec.merge_type})")
            built = merge_segments(minion_spark(), dirs, schema, table_config, spec, work / "out",
                                   configs[NAME_PREFIX_KEY], custom,
                                   bucket_ms=period_ms(bucket) if bucket else None)  # fmt: skip
            outputs = [result.name for result in built]
            # always through lineage (Pinot's generator always sets enableReplaceSegments):
            # uploading the outputs beside the inputs would count their rows twice
            self._swap(ctx, controller, raw, kind, names, built, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {"mergeLevel": configs[LEVEL_KEY], "segmentsFrom": names, "segmentsTo": outputs,
                "numRecords": sum(r.num_rows for r in built)}  # fmt: skip

    @staticmethod
    def _swap(ctx: SubtaskContext, controller: str, raw: str, kind: str, inputs: list[str],
              built: list, work: Path) -> None:  # fmt: skip
        outputs = [result.name for result in built]
        ctx.report_progress(f"starting the replacement of {len(inputs)} by {len(outputs)} segments")
        # forceCleanup: a retried subtask's start reverts the entry its failed attempt left
        # IN_PROGRESS and deletes what that attempt uploaded under the same names
        entry = start_replace_segments(controller, raw, kind, inputs, outputs, force_cleanup=True)
        try:
            for i, result in enumerate(built):
                ctx.report_progress(f"uploading segment {result.name} ({i + 1} of {len(built)})")
                upload(controller, raw, kind, result.path, work)
            ctx.report_progress(f"ending the replacement (lineage entry {entry})")
            end_replace_segments(controller, raw, kind, entry)
        except BaseException:
            try:
                revert_replace_segments(controller, raw, kind, entry, force_revert=True)
            except SubtaskFailedError as exc:  # the failure being raised matters more
                log.warning("reverting lineage entry %s of %s_%s: %s", entry, raw, kind, exc)
            raise
