"""PurgeTask on a minion: download one segment, rewrite it without the purged records on the
worker's SparkSession, and upload it under the same name (a refresh, so queries switch from
the old copy to the new one). A segment with no record left is deleted instead, unless the
generator marked it ``keepEmptySegment`` (a REALTIME partition's newest completed segment):
that one is uploaded empty. On a REALTIME table the refresh keeps the segment's stream
offsets and status in ZooKeeper, and the servers hosting it load the new copy.

The subtask fails when the upload or delete is refused or unanswered: the table still
holds the unpurged segment, so reporting success would hide it (Pinot PR #18813).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import requests

from controller.outbound import outbound_policy
from controller.zk import get_store
from engine.clusterstate import split_table_name
from engine.common.clock import now_ms
from engine.segment import pack_segment, unpack_segment
from engine.server.download import (
    SegmentSources,
    controller_download,
    download_segment,
    registered_controllers,
)
from spark_jobs.ingestion.push import PushTarget, push_segment
from spark_jobs.ingestion.table_source import (
    controller_message,
    default_schema_uri,
    default_table_config_uri,
    fetch_schema,
    fetch_table_config,
)
from tasks.controller_auth import fetcher_headers, task_headers, task_token
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.generators.base import UPLOAD_URL_KEY
from tasks.generators.purge import (
    CRC_KEY,
    DOWNLOAD_URL_KEY,
    KEEP_EMPTY_KEY,
    MODIFY_PREFIX,
    PURGE_FILTER_KEY,
    RECORD_MODIFIER_KEY,
    RECORD_PURGER_KEY,
    SEGMENT_NAME_KEY,
    TASK_TYPE,
)


def controller_of(upload_url: str) -> str:
    return upload_url.rsplit("/segments", 1)[0]


def table_objects(controller: str, raw_table: str, table_type: str):
    """The engine Schema and TableConfig of ``raw_table``'s ``table_type`` half."""
    from engine.spi import Schema, TableConfig

    schema = fetch_schema(default_schema_uri(controller, raw_table), auth_token=task_token())
    config = fetch_table_config(f"{default_table_config_uri(controller, raw_table)}"
                                f"?type={table_type}", raw_table, auth_token=task_token())  # fmt: skip
    parsed = Schema.from_json(schema)
    return parsed, TableConfig.from_json(config, schema=parsed)


def fetch_segment(url: str, work: Path, table_type: str, controller: str) -> Path:
    """Download and unpack one segment; its directory. The controller's download URL names
    the raw table, which is ambiguous for a hybrid table without ``type``. An http(s) URL of
    neither ``controller`` (the subtask's) nor another controller registered in ZooKeeper goes
    only where the outbound policy allows (a METADATA push's DOWNLOAD_URI is a caller's)."""
    if url.startswith(("http://", "https://")) and "/segments/" in url and "type=" not in url:
        url += ("&" if "?" in url else "?") + f"type={table_type}"
    # the host and port of any download of ``controller`` ("/segments/" alone normalizes to
    # "/segments", which is no download, and left ``own`` None)
    own = controller_download(f"{controller}/segments/_")
    registered = registered_controllers(get_store)  # a segment pushed through another one
    sources = SegmentSources(
        outbound_policy(), lambda host, port: (host, port) == own or registered(host, port)
    )
    tar = download_segment(url, work / "download" / "segment.tar.gz", sources,
                           headers=fetcher_headers())  # fmt: skip
    return unpack_segment(tar, work / "input")


def upload(controller: str, raw_table: str, table_type: str, segment_dir: Path,
           work: Path) -> str:  # fmt: skip
    """Pack and push a built segment; raises SubtaskFailedError when it is not in the table."""
    tar = pack_segment(segment_dir, work / "tars" / f"{segment_dir.name}.tar.gz")
    target = PushTarget(controller, raw_table, table_type, "TAR", auth_token=task_token())
    pushed = push_segment(target, tar)
    if not pushed.ok:
        raise SubtaskFailedError(f"the upload of segment {segment_dir.name} to {controller} "
                                 f"failed: {pushed.message}")  # fmt: skip
    return pushed.message


def current_crc(controller: str, raw_table: str, table_type: str, segment: str) -> str | None:
    """The segment's CRC in ZooKeeper now; None when the table no longer has it."""
    try:
        response = requests.get(f"{controller}/segments/{raw_table}/zkmetadata",
                                params={"type": table_type}, headers=task_headers(),
                                timeout=60)  # fmt: skip
    except requests.RequestException as exc:
        raise SubtaskFailedError(f"reading the metadata of segment {segment}: {exc}") from exc
    if response.status_code >= 300:
        raise SubtaskFailedError(f"reading the metadata of segment {segment} failed: HTTP "
                                 f"{response.status_code} {controller_message(response)}")  # fmt: skip
    fields = response.json().get(segment)
    return None if fields is None else str(fields.get("segment.crc", ""))


def check_unchanged(segment: str, purged_crc: str | None, now_crc: str | None) -> bool:
    """Whether the purged copy may replace the segment: False when the segment is gone
    (nothing to replace: uploading would bring deleted data back); SubtaskFailedError when
    it was replaced since the subtask was generated (the purge would undo that change)."""
    if now_crc is None:
        return False
    if purged_crc and now_crc != purged_crc:
        raise SubtaskFailedError(f"segment {segment} changed while it was purged (CRC "
                                 f"{purged_crc}, now {now_crc}); the next run purges the new "
                                 f"copy")  # fmt: skip
    return True


def delete_segment(controller: str, raw_table: str, table_type: str, segment: str) -> None:
    try:
        response = requests.delete(f"{controller}/segments/{raw_table}/{segment}",
                                   params={"type": table_type}, headers=task_headers(),
                                   timeout=60)  # fmt: skip
    except requests.RequestException as exc:
        raise SubtaskFailedError(f"deleting the empty segment {segment}: {exc}") from exc
    if response.status_code >= 300 and response.status_code != 404:
        raise SubtaskFailedError(f"deleting the empty segment {segment} failed: HTTP "
                                 f"{response.status_code} {controller_message(response)}")  # fmt: skip


class PurgeTaskExecutor(TaskExecutor):
    task_type = TASK_TYPE

    def execute(self, ctx: SubtaskContext) -> dict:
        from spark_jobs.minion.purge import PurgeSpec, purge_segment
        from spark_jobs.minion.session import minion_spark

        configs = ctx.configs
        controller = controller_of(configs[UPLOAD_URL_KEY])
        raw_table, table_type = split_table_name(ctx.table_name)
        table_type = table_type or "OFFLINE"
        segment = configs[SEGMENT_NAME_KEY]
        spec = PurgeSpec.resolve(
            ctx.table_name, purge_filter=configs.get(PURGE_FILTER_KEY),
            modifications={k[len(MODIFY_PREFIX):]: v for k, v in configs.items()
                           if k.startswith(MODIFY_PREFIX)},
            record_purger=configs.get(RECORD_PURGER_KEY),
            record_modifier=configs.get(RECORD_MODIFIER_KEY),
        )  # fmt: skip
        ctx.report_progress("reading the schema and table config")
        schema, table_config = table_objects(controller, raw_table, table_type)
        spec.checked_sql(schema.columns)  # before anything is downloaded or Spark starts
        work = Path(tempfile.mkdtemp(prefix="sprig-purge-"))
        try:
            ctx.report_progress(f"downloading segment {segment}")
            segment_dir = fetch_segment(configs[DOWNLOAD_URL_KEY], work, table_type, controller)
            ctx.report_progress(f"purging segment {segment}")
            result, before, after = purge_segment(
                minion_spark(), segment_dir, schema, table_config, spec, work / "out",
                now_ms(), keep_empty=configs.get(KEEP_EMPTY_KEY) == "true",
            )  # fmt: skip
            if not check_unchanged(
                segment,
                configs.get(CRC_KEY),
                current_crc(controller, raw_table, table_type, segment),
            ):
                return {
                    "segmentName": segment,
                    "numRecordsBefore": before,
                    "skipped": "the segment was deleted meanwhile; nothing uploaded",
                }
            if result is None:
                ctx.report_progress(f"deleting segment {segment}: no record is left")
                delete_segment(controller, raw_table, table_type, segment)
                return {"segmentName": segment, "numRecordsBefore": before,
                        "numRecordsPurged": before, "deleted": True}  # fmt: skip
            ctx.report_progress(f"uploading segment {segment} ({after} of {before} records)")
            message = upload(controller, raw_table, table_type, result.path, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {"segmentName": segment, "numRecordsBefore": before,
                "numRecordsPurged": before - after, "upload": message}  # fmt: skip
