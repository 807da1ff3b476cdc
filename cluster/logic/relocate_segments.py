"""SegmentRelocator's work: completed segments of a REALTIME table move to the servers tagged
``tenants.tagOverrideConfig.realtimeCompleted``, while CONSUMING segments stay on the consuming
servers (``realtimeConsuming``, else ``<serverTenant>_REALTIME``), as Pinot's relocator does.

A committing segment stays where it was consumed (Pinot's behaviour too): moving it at commit
time would leave it unserved until the new servers had downloaded it. The relocator moves it
later, make-before-break, through the rebalance job runner: the new replicas are added next to
the old ones, and the old ones are dropped only once the external view shows the new ones
ONLINE, so every query meanwhile finds each segment on some server.
"""

from __future__ import annotations

import logging
import threading
import uuid

from django.conf import settings

from cluster.errors import BadRequest
from cluster.logic.assign_segments import rebalance_target
from cluster.logic.cluster_view import (
    instances_with_tag,
    parsed,
    replication_of,
    table_server_tag,
)
from cluster.logic.controller_jobs import REBALANCE, load_job, save_job, table_jobs
from engine.clusterstate import ClusterStore, InstanceType, ResourceAssignment, SegmentState
from engine.clusterstate.records import now_ms
from engine.clusterstate.tags import instance_id

log = logging.getLogger(__name__)

COMPLETED_KEY = "realtimeCompleted"


def completed_server_tag(config) -> str | None:
    """The tag of a REALTIME table's completed-segment servers when it differs from its
    consuming servers' tag (relocation is on); None otherwise (and for OFFLINE tables)."""
    if config.table_type != "REALTIME":
        return None
    tag = str(config.tenants.tag_override_config.get(COMPLETED_KEY) or "").strip()
    return tag if tag and tag != table_server_tag(config) else None


def completed_servers(store: ClusterStore, tag: str) -> list[str]:
    return [c.instance_id for c in instances_with_tag(store, tag) if c.type is InstanceType.SERVER]


def _is_consuming(replicas: dict[str, str]) -> bool:
    return SegmentState.CONSUMING.value in replicas.values()


def completed_target(store: ClusterStore, config, ideal: ResourceAssignment | None) -> dict:
    """segment -> {server: ONLINE} for every completed segment of ``ideal`` on the completed
    servers (replicas already there stay; the rest are balanced over them). Empty when
    relocation is off. BadRequest naming the tag when it has too few servers."""
    tag = completed_server_tag(config)
    if tag is None or ideal is None:
        return {}
    completed = {s: r for s, r in ideal.segments.items() if r and not _is_consuming(r)}
    if not completed:
        return {}
    servers = completed_servers(store, tag)
    replication = replication_of(config, servers)
    if replication > len(servers):
        raise BadRequest(
            f"{config.table_name_with_type}: tenants.tagOverrideConfig.{COMPLETED_KEY} is "
            f"{tag!r}, which {len(servers)} enabled server(s) carry; {replication} replicas "
            f"need as many"
        )
    subset = ResourceAssignment(ideal.resource, segments=completed)
    return rebalance_target(subset, servers, replication)


def _running(store: ClusterStore, table: str) -> list[str]:
    return [
        job_id
        for job_id in table_jobs(store, table, [REBALANCE])
        if load_job(store, REBALANCE, job_id)["tableRebalanceProgressStats"]["status"]
        == "IN_PROGRESS"
    ]


def relocate_table(store: ClusterStore, config, *, run_async: bool = True) -> dict:
    """Start moving ``config``'s completed segments onto its completed servers; a report of
    what moves (``segmentsToMove``) and the rebalance job that moves them (``jobId``)."""
    # imported here: rebalance_table imports completed_target from this module
    from cluster.logic.rebalance_table import run_rebalance

    table = config.table_name_with_type
    ideal = store.ideal_state(table)
    target = completed_target(store, config, ideal)
    moves = {s: r for s, r in target.items() if r != ideal.segments.get(s)}
    if not moves:
        return {"status": "NO_OP", "segmentsToMove": 0}
    running = _running(store, table)
    if running:  # the next run relocates what this one could not
        return {"status": "SKIPPED", "reason": f"rebalance job {running[0]} is in progress"}
    job_id = str(uuid.uuid4())
    stats = {
        "status": "IN_PROGRESS", "startTimeMs": now_ms(), "timeToFinishInSeconds": 0,
        "completionStatusMsg": "", "downtime": False,
        "initialSegmentAssignment": ideal.segments, "targetSegmentAssignment": moves,
    }  # fmt: skip
    runner = instance_id(
        InstanceType.CONTROLLER, settings.CONTROLLER_HOST, settings.CONTROLLER_PORT
    )
    save_job(store, REBALANCE, job_id, table, {
        "jobId": job_id, "tableNameWithType": table, "controller": runner,
        "trigger": "SegmentRelocator", "tableRebalanceProgressStats": stats,
    })  # fmt: skip
    args = (store, job_id, table, moves, False)
    if run_async:
        threading.Thread(target=run_rebalance, args=args, name=f"relocate-{table}",
                         daemon=True).start()  # fmt: skip
    else:
        run_rebalance(*args)
    log.info("%s: relocating %d completed segment(s), job %s", table, len(moves), job_id)
    return {"status": "IN_PROGRESS", "segmentsToMove": len(moves), "jobId": job_id}


def relocate_segments(store: ClusterStore, rows) -> dict:
    """The periodic task: every REALTIME table of ``rows`` with relocation on; table ->
    report. One table's error (too few completed servers) does not stop the others."""
    report = {}
    for row in rows:
        if row.table_type != "REALTIME":
            continue
        config = parsed(row)
        if completed_server_tag(config) is None:
            continue
        try:
            report[row.name_with_type] = relocate_table(store, config)
        except BadRequest as exc:
            report[row.name_with_type] = {"status": "FAILED", "reason": exc.message}
    return report
