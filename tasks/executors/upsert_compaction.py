"""UpsertCompactionTask on a minion: take the segment's valid docs from its replicas (they must
agree under EQUAL), download the segment, rebuild it on Spark with only those docs, and upload
it under the same name as a refresh, only while ZooKeeper still holds the copy the bitmap
describes (its CRC). Each server then loads the new copy and replays it into its upsert
metadata under the partition's lock before it serves it, so answers are the same before,
during and after the swap. A segment with no valid doc is deleted (the partition's newest
completed one is kept, rebuilt empty: its end offset starts the next segment)."""

from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path

import orjson
import requests
from pyroaring import BitMap

from engine.clusterstate import split_table_name
from engine.common.clock import now_ms
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.executors.purge import (
    check_unchanged,
    controller_of,
    current_crc,
    delete_segment,
    fetch_segment,
    table_objects,
    upload,
)
from tasks.generators.base import UPLOAD_URL_KEY
from tasks.generators.upsert_compaction import (
    CONSENSUS_MODE,
    CRC_KEY,
    DOWNLOAD_URL_KEY,
    KEEP_EMPTY_KEY,
    SEGMENT_NAME_KEY,
    SERVERS_KEY,
    TASK_TYPE,
    VALID_DOC_IDS_TYPE,
)


def replica_bitmaps(urls: list[str], table: str, segment: str, kind: str, crc: str) -> list[BitMap]:
    """The valid docs each replica reports for this copy of the segment (same CRC)."""
    found = []
    for url in urls:
        try:
            response = requests.get(f"{url}/segments/{table}/{segment}/validDocIdsBitmap",
                                    params={"validDocIdsType": kind}, timeout=60)  # fmt: skip
        except requests.RequestException:
            continue
        if response.status_code != 200:
            continue
        body = response.json()
        if str(body.get("segmentCrc")) == crc:
            found.append(BitMap.deserialize(base64.b64decode(body["bitmap"])))
    return found


def agreed_bitmap(bitmaps: list[BitMap], replicas: int, mode: str, segment: str) -> BitMap:
    if not bitmaps:
        raise SubtaskFailedError(f"no replica of {segment} gave its valid docs")
    if mode == "EQUAL":
        if len(bitmaps) < replicas or any(b != bitmaps[0] for b in bitmaps[1:]):
            raise SubtaskFailedError(f"the replicas of {segment} disagree on its valid docs "
                                     "(validDocIdsConsensusMode EQUAL); a later run retries")  # fmt: skip
        return bitmaps[0]
    return max(bitmaps, key=len)  # MOST_VALID_DOCS / UNSAFE


class UpsertCompactionTaskExecutor(TaskExecutor):
    task_type = TASK_TYPE

    def execute(self, ctx: SubtaskContext) -> dict:
        from spark_jobs.minion.session import minion_spark
        from spark_jobs.minion.upsert_compaction import compact_segment

        configs = ctx.configs
        controller = controller_of(configs[UPLOAD_URL_KEY])
        raw_table, table_type = split_table_name(ctx.table_name)
        segment, crc = configs[SEGMENT_NAME_KEY], configs[CRC_KEY]
        if not check_unchanged(
            segment, crc, current_crc(controller, raw_table, "REALTIME", segment)
        ):
            return {"segmentName": segment, "skipped": "the segment was deleted meanwhile"}
        urls = orjson.loads(configs.get(SERVERS_KEY) or "[]")
        ctx.report_progress(f"reading the valid docs of {segment} from {len(urls)} replica(s)")
        valid = agreed_bitmap(
            replica_bitmaps(urls, ctx.table_name, segment, configs.get(VALID_DOC_IDS_TYPE, "SNAPSHOT"), crc),
            len(urls), configs.get(CONSENSUS_MODE, "EQUAL"), segment,
        )  # fmt: skip
        keep_empty = configs.get(KEEP_EMPTY_KEY) == "true"
        if not valid and not keep_empty:
            ctx.report_progress(f"deleting segment {segment}: no valid doc is left")
            delete_segment(controller, raw_table, "REALTIME", segment)
            return {"segmentName": segment, "deleted": True}
        schema, table_config = table_objects(controller, raw_table, table_type or "REALTIME")
        work = Path(tempfile.mkdtemp(prefix="sprig-upsert-compaction-"))
        try:
            ctx.report_progress(f"downloading segment {segment}")
            segment_dir = fetch_segment(configs[DOWNLOAD_URL_KEY], work, "REALTIME")
            ctx.report_progress(f"compacting segment {segment} to {len(valid)} valid docs")
            result, before, after = compact_segment(
                minion_spark(), segment_dir, schema, table_config, list(valid), work / "out",
                now_ms(),
            )  # fmt: skip
            if not check_unchanged(
                segment, crc, current_crc(controller, raw_table, "REALTIME", segment)
            ):
                return {"segmentName": segment, "skipped": "the segment was deleted meanwhile"}
            message = upload(controller, raw_table, "REALTIME", result.path, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {"segmentName": segment, "numRecordsBefore": before,
                "numRecordsCompacted": before - after, "upload": message}  # fmt: skip
