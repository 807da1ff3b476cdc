"""UpsertCompactionTask on a minion (Pinot's ``UpsertCompactionTaskExecutor``): take the
segment's valid docs from the servers that hold it, check that the copy they describe is the
one ZooKeeper and the deep store hold (its CRC), rebuild the segment on Spark with only those
docs, and upload it under the same name as a refresh, as Pinot does.

The name stays: an LLC name carries the partition and sequence that the servers' upsert
metadata orders ties by, and the refresh keeps the segment's ZooKeeper metadata (stream
offsets, status, partition). Each server loads the new copy beside the old one and swaps it in
under the partition's lock, the new docs taking over their keys from the old copy's
(``engine.upsert.partition``), so no query sees a key twice or not at all, during the swap or
after. Docs that became invalid since the bitmap was read lose to the newer versions again.

A segment whose docs are all invalid is deleted (unless it is its partition's newest
completed segment). A failure anywhere before the upload leaves the old segment serving, and
a failed upload fails the subtask (Pinot PR #18813).
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path

import requests
from pyroaring import BitMap

from engine.clusterstate import split_table_name
from engine.common.clock import now_ms
from engine.segment import read_metadata
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.executors.purge import (
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
    IGNORE_CRC_KEY,
    KEEP_EMPTY_KEY,
    SEGMENT_NAME_KEY,
    SERVER_TIMEOUT_S,
    TASK_TYPE,
    VALID_DOC_IDS_TYPE,
    replica_admin_urls,
)


def replica_bitmap(url: str, table: str, segment: str, kind: str) -> dict:
    """One server's validDocIdsBitmap answer; SubtaskFailedError saying why there is none."""
    try:
        response = requests.get(f"{url}/segments/{table}/{segment}/validDocIdsBitmap",
                                params={"validDocIdsType": kind}, timeout=SERVER_TIMEOUT_S)  # fmt: skip
    except requests.RequestException as exc:
        raise SubtaskFailedError(f"the server at {url} did not give the valid docs of "
                                 f"{segment}: {exc}") from exc  # fmt: skip
    if response.status_code != 200:
        raise SubtaskFailedError(f"the server at {url} has no {kind} valid docs of segment "
                                 f"{segment}: HTTP {response.status_code} {response.text[:300]}")  # fmt: skip
    return response.json()


def replica_bitmaps(urls: dict[str, str], table: str, segment: str, kind: str, crc: str,
                    *, ignore_crc: bool = False) -> dict[str, BitMap]:  # fmt: skip
    """instance -> the valid docs it reports for ``segment``, each checked to describe the
    copy with ``crc`` (ZooKeeper's): a bitmap of another copy would keep the wrong docs."""
    if not urls:
        raise SubtaskFailedError(f"no server has segment {segment} ONLINE in the external view")
    out = {}
    for instance, url in sorted(urls.items()):
        body = replica_bitmap(url, table, segment, kind)
        if str(body.get("segmentCrc")) != crc and not ignore_crc:
            raise SubtaskFailedError(f"CRC mismatch for segment {segment}: {instance} holds the "
                                     f"copy with CRC {body.get('segmentCrc')}, ZooKeeper has "
                                     f"{crc} (set {IGNORE_CRC_KEY}=true to compact anyway)")  # fmt: skip
        out[instance] = BitMap.deserialize(base64.b64decode(body["bitmap"]))
    return out


def agreed_bitmap(bitmaps: dict[str, BitMap], mode: str, segment: str) -> BitMap:
    """The valid docs to keep under ``validDocIdsConsensusMode``."""
    found = list(bitmaps.values())
    if mode == "EQUAL" and any(b != found[0] for b in found[1:]):
        counts = ", ".join(f"{i}: {len(b)}" for i, b in sorted(bitmaps.items()))
        raise SubtaskFailedError(f"the replicas of {segment} disagree on its valid docs ({counts}; "
                                 "validDocIdsConsensusMode EQUAL); a later run retries")  # fmt: skip
    return max(found, key=len)  # MOST_VALID_DOCS; UNSAFE takes any, this one as well


class UpsertCompactionTaskExecutor(TaskExecutor):
    task_type = TASK_TYPE

    def execute(self, ctx: SubtaskContext) -> dict:
        configs = ctx.configs
        controller = controller_of(configs[UPLOAD_URL_KEY])
        raw_table = split_table_name(ctx.table_name)[0]
        segment, crc = configs[SEGMENT_NAME_KEY], configs[CRC_KEY]
        ignore_crc = configs.get(IGNORE_CRC_KEY, "false").lower() == "true"
        if not _unchanged(controller, raw_table, segment, crc):
            return {"segmentName": segment, "skipped": "the segment was deleted meanwhile"}
        ctx.report_progress(f"reading the valid docs of {segment}")
        valid = agreed_bitmap(self.bitmaps(ctx.table_name, segment, configs, ignore_crc),
                              configs.get(CONSENSUS_MODE, "EQUAL"), segment)  # fmt: skip
        if not valid:
            if configs.get(KEEP_EMPTY_KEY) == "true":
                return {"segmentName": segment, "skipped": "no valid doc; the partition's newest "
                        "completed segment stays"}  # fmt: skip
            ctx.report_progress(f"deleting segment {segment}: no valid doc is left")
            delete_segment(controller, raw_table, "REALTIME", segment)
            return {"segmentName": segment, "deleted": True}
        return self.compact(ctx, controller, raw_table, valid, ignore_crc)

    def bitmaps(self, table: str, segment: str, configs: dict, ignore_crc: bool):
        from controller.zk import get_store

        urls = replica_admin_urls(get_store(), table).get(segment, {})
        return replica_bitmaps(urls, table, segment, configs.get(VALID_DOC_IDS_TYPE, "SNAPSHOT"),
                               configs[CRC_KEY], ignore_crc=ignore_crc)  # fmt: skip

    def compact(self, ctx: SubtaskContext, controller: str, raw_table: str, valid: BitMap,
                ignore_crc: bool) -> dict:  # fmt: skip
        from spark_jobs.minion.session import minion_spark
        from spark_jobs.minion.upsert_compaction import compact_segment

        configs = ctx.configs
        segment, crc = configs[SEGMENT_NAME_KEY], configs[CRC_KEY]
        schema, table_config = table_objects(controller, raw_table, "REALTIME")
        work = Path(tempfile.mkdtemp(prefix="sprig-upsert-compaction-"))
        try:
            ctx.report_progress(f"downloading segment {segment}")
            segment_dir = fetch_segment(configs[DOWNLOAD_URL_KEY], work, "REALTIME", controller)
            stored = str(read_metadata(segment_dir).crc)
            if stored != crc and not ignore_crc:
                raise SubtaskFailedError(f"CRC mismatch for segment {segment}: the deep store "
                                         f"copy has CRC {stored}, ZooKeeper {crc}")  # fmt: skip
            ctx.report_progress(f"compacting segment {segment} to {len(valid)} valid docs")
            result, before, after = compact_segment(
                minion_spark(), segment_dir, schema, table_config, list(valid),
                work / "out", now_ms(),
            )  # fmt: skip
            if not _unchanged(controller, raw_table, segment, crc):
                return {"segmentName": segment, "skipped": "the segment was deleted meanwhile"}
            ctx.report_progress(f"uploading segment {segment} ({after} of {before} docs)")
            message = upload(controller, raw_table, "REALTIME", result.path, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {"segmentName": segment, "numRecordsBefore": before,
                "compactedRecordsCount": before - after, "upload": message}  # fmt: skip


def _unchanged(controller: str, raw_table: str, segment: str, crc: str) -> bool:
    """False when the segment is gone; SubtaskFailedError when ZooKeeper holds another copy
    than the one the subtask was made for (a refresh since: the bitmap would not fit it)."""
    now = current_crc(controller, raw_table, "REALTIME", segment)
    if now is None:
        return False
    if now != crc:
        raise SubtaskFailedError(f"CRC mismatch for segment {segment}: ZooKeeper now has CRC "
                                 f"{now}, the task was made for {crc}; the next run compacts "
                                 "the new copy")  # fmt: skip
    return True
