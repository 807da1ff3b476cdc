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

from cluster.logic.cluster_view import parsed
from cluster.logic.completed_placement import completed_server_tag, completed_target
from cluster.logic.controller_jobs import REBALANCE, save_job
from cluster.logic.rebalance_table import run_rebalance, running_rebalance_jobs
from controller.errors import BadRequest
from engine.clusterstate import ClusterStore, InstanceType
from engine.clusterstate.tags import instance_id
from engine.common.clock import now_ms

log = logging.getLogger(__name__)


def relocate_table(store: ClusterStore, config, *, run_async: bool = True) -> dict:
    """Start moving ``config``'s completed segments onto its completed servers; a report of
    what moves (``segmentsToMove``) and the rebalance job that moves them (``jobId``)."""
    table = config.table_name_with_type
    ideal = store.ideal_state(table)
    target = completed_target(store, config, ideal)
    moves = {s: r for s, r in target.items() if r != ideal.segments.get(s)}
    if not moves:
        return {"status": "NO_OP", "segmentsToMove": 0}
    running = running_rebalance_jobs(store, table)
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
