"""Force-committing CONSUMING segments (``POST /tables/{t}/forceCommit``, and pausing).

The controller sends each server holding a chosen CONSUMING replica one ``FORCE_COMMIT``
message naming its segments (Pinot's ForceCommitMessage); the server ends their consumption
at the current offset (reason ``forceCommitMessageReceived``) and they commit through the
completion protocol. With ``batch_size`` below the number of segments the messages go out in
batches on a thread of their own: the next batch once the previous one has committed
(checked every ``interval_s``, waited for at most ``timeout_s``), so a large table does not
build all its segments at once.

The job is kept in ``CONTROLLER_JOBS/FORCE_COMMIT/<jobId>``; its status counts the chosen
segments whose ZK metadata is still IN_PROGRESS.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

import orjson

from cluster.logic.controller_jobs import FORCE_COMMIT, load_job, save_job
from cluster.logic.realtime.consuming_segments import CONSUMING
from cluster.logic.realtime.pause import consuming_segments
from controller.errors import BadRequest
from engine.clusterstate import ClusterStateError, ClusterStore, Message, ResourceAssignment
from engine.clusterstate.records import FORCE_COMMIT_MESSAGE, FORCE_COMMIT_SEGMENTS, now_ms
from engine.clusterstate.segment_status import is_committed
from engine.realtime.llc_name import LLCSegmentName

log = logging.getLogger(__name__)
MAX_BATCH = 2**31 - 1  # Pinot's default batchSize (Integer.MAX_VALUE): everything at once


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def choose_segments(ideal: ResourceAssignment | None, partitions: str | None = None,
                    segments: str | None = None) -> list[str]:  # fmt: skip
    """The CONSUMING segments to commit: all, those of the comma-separated partition ids, or
    the named ones. BadRequest for both lists at once, a partition id that is not a number or
    has no CONSUMING segment, or a segment that is not CONSUMING."""
    consuming = consuming_segments(ideal)
    table = ideal.resource if ideal is not None else "the table"
    wanted_partitions, wanted_segments = _names(partitions), _names(segments)
    if wanted_partitions and wanted_segments:
        raise BadRequest("Cannot specify both partitions and segments to commit")
    if wanted_segments:
        missing = [s for s in wanted_segments if s not in consuming]
        if missing:
            raise BadRequest(f"segment(s) {', '.join(missing)} of {table} are not CONSUMING; "
                             f"CONSUMING segments: {', '.join(consuming) or 'none'}")  # fmt: skip
        return sorted(set(wanted_segments))
    if wanted_partitions:
        try:
            ids = {int(p) for p in wanted_partitions}
        except ValueError:
            raise BadRequest(
                f"partitions must be comma-separated partition ids, got '{partitions}'"
            ) from None
        by_partition = {s: LLCSegmentName.parse(s) for s in consuming}
        chosen = [s for s, n in by_partition.items() if n is not None and n.partition in ids]
        found = {by_partition[s].partition for s in chosen}
        if ids - found:
            have = sorted({n.partition for n in by_partition.values() if n is not None})
            raise BadRequest(
                f"partition(s) {', '.join(map(str, sorted(ids - found)))} of {table} have no "
                f"CONSUMING segment; partitions consuming: {', '.join(map(str, have)) or 'none'}"
            )
        return sorted(chosen)
    return consuming


def send_force_commit(store: ClusterStore, ideal: ResourceAssignment, segments: list[str]) -> int:
    """One FORCE_COMMIT message per server holding a CONSUMING replica of ``segments``;
    returns the number of messages sent."""
    per_server: dict[str, list[str]] = {}
    for segment in segments:
        for server, state in (ideal.segments.get(segment) or {}).items():
            if state == CONSUMING:
                per_server.setdefault(server, []).append(segment)
    for server, names in sorted(per_server.items()):
        message = Message(uuid.uuid4().hex, FORCE_COMMIT_MESSAGE, ideal.resource, "",
                          {FORCE_COMMIT_SEGMENTS: ",".join(sorted(names))})  # fmt: skip
        store.send_message(server, message)
    return len(per_server)


def uncommitted(store: ClusterStore, table: str, segments: list[str]) -> list[str]:
    """Those of ``segments`` whose ZK metadata is still IN_PROGRESS (a deleted one is not)."""
    out = []
    for segment in segments:
        meta = store.segment_metadata(table, segment)
        if meta is not None and not is_committed(meta):
            out.append(segment)
    return out


def commit_in_batches(store: ClusterStore, ideal: ResourceAssignment, segments: list[str], *,
                      batch_size: int = MAX_BATCH, interval_s: float = 5.0,
                      timeout_s: float = 180.0) -> None:  # fmt: skip
    """Send the force commits, all at once or batch by batch on a daemon thread."""
    if batch_size >= len(segments):
        send_force_commit(store, ideal, segments)
        return
    batches = [segments[i : i + batch_size] for i in range(0, len(segments), batch_size)]

    def pending(batch: list[str]) -> list[str]:
        try:
            return uncommitted(store, ideal.resource, batch)
        except ClusterStateError as exc:  # ZooKeeper away for a moment: ask again later
            log.warning("%s: force-commit status unknown (%s)", ideal.resource, exc)
            return batch

    def run() -> None:
        for number, batch in enumerate(batches, 1):
            try:
                send_force_commit(store, ideal, batch)
            except ClusterStateError as exc:
                log.error("%s: force-commit batch %d/%d not sent, the rest dropped: %s",
                          ideal.resource, number, len(batches), exc)  # fmt: skip
                return
            deadline = time.monotonic() + timeout_s
            while pending(batch) and time.monotonic() < deadline:
                time.sleep(interval_s)
            left = pending(batch)
            if left:  # go on: one stuck segment must not keep the others consuming forever
                log.warning("%s: force-commit batch %d/%d: %s not committed after %.0f s",
                            ideal.resource, number, len(batches), ", ".join(left), timeout_s)  # fmt: skip

    threading.Thread(target=run, name=f"force-commit-{ideal.resource}", daemon=True).start()


def force_commit(store: ClusterStore, table: str, *, partitions: str | None = None,
                 segments: str | None = None, batch_size: int = MAX_BATCH,
                 interval_s: float = 5.0, timeout_s: float = 180.0) -> dict:  # fmt: skip
    """Force-commit ``table``'s (with type) chosen CONSUMING segments as a job; Pinot's
    response plus the segments chosen."""
    ideal = store.ideal_state(table)
    if ideal is None:
        raise BadRequest(f"Table {table} has no ideal state yet")
    chosen = choose_segments(ideal, partitions, segments)
    job_id = str(uuid.uuid4())
    submitted = now_ms()
    save_job(store, FORCE_COMMIT, job_id, table, {
        "jobId": job_id, "tableName": table, "jobType": FORCE_COMMIT,
        "submissionTimeMs": submitted, "segmentsForceCommitted": chosen,
    })  # fmt: skip
    commit_in_batches(store, ideal, chosen, batch_size=batch_size, interval_s=interval_s,
                      timeout_s=timeout_s)  # fmt: skip
    log.info("%s: force commit %s of %s", table, job_id, ", ".join(chosen) or "no segment")
    return {
        "forceCommitStatus": "SUCCESS",
        "jobMetaZKWriteStatus": "SUCCESS",
        "forceCommitJobId": job_id,
        "forceCommittedSegments": chosen,
    }


def force_commit_status(store: ClusterStore, job_id: str) -> dict:
    """``GET /tables/forceCommitStatus/{jobId}``; NotFound for an unknown job. As in Pinot,
    ``segmentsForceCommitted`` is a JSON-encoded string."""
    job = load_job(store, FORCE_COMMIT, job_id)
    chosen = list(job.get("segmentsForceCommitted") or [])
    left = uncommitted(store, job["tableName"], chosen)
    return {
        "jobId": job_id,
        "tableName": job["tableName"],
        "jobType": FORCE_COMMIT,
        "submissionTimeMs": str(job["submissionTimeMs"]),
        "segmentsForceCommitted": orjson.dumps(chosen).decode(),
        "segmentsYetToBeCommitted": left,
        "numberOfSegmentsYetToBeCommitted": len(left),
    }
