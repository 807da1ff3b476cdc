"""Table rebalance (``POST /tables/{t}/rebalance``): compute the balanced ideal state for the
current servers and move to it without downtime, as a tracked job.

No-downtime moves happen in two steps: first every new replica is added next to the old ones;
once the external view shows all of them ONLINE (or CONSUMING) the old replicas are removed.
With ``downtime=true`` the target ideal state is written at once.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from django.conf import settings

from cluster.logic.assign_segments import rebalance_target
from cluster.logic.cluster_view import parsed, replication_of, table_row, table_servers
from cluster.logic.completed_placement import completed_target
from cluster.logic.controller_jobs import REBALANCE, load_job, save_job, table_jobs, update_job
from cluster.logic.instance_partitions import replica_group_target
from controller.errors import Conflict
from engine.clusterstate import (
    SERVING_STATES,
    ClusterStore,
    ResourceAssignment,
    ZooKeeperUnavailableError,
)
from engine.clusterstate.segment_status import CONSUMING_GROUP, OFFLINE_GROUP, assignment_group
from engine.clusterstate.tags import InstanceType, instance_id
from engine.common.clock import now_ms

log = logging.getLogger(__name__)


def rebalance_table(
    store: ClusterStore,
    table: str,
    table_type: str | None,
    *,
    dry_run: bool = False,
    downtime: bool = False,
    include_consuming: bool = True,
    run_async: bool = True,
) -> dict:
    row = table_row(table, table_type)
    config = parsed(row)
    resource = row.name_with_type
    servers = table_servers(store, config)
    ideal = store.ideal_state(resource) or ResourceAssignment(resource)
    target = replica_group_target(store, config, ideal, servers, save=not dry_run)
    if target is None:
        target = rebalance_target(ideal, servers, replication_of(config, servers))
    # with tagOverrideConfig.realtimeCompleted, completed segments belong on those servers
    target.update(completed_target(store, config, ideal))
    target.update(
        staying_segments(ideal.segments, realtime=config.table_type == "REALTIME",
                         include_consuming=include_consuming)
    )  # fmt: skip
    job_id = str(uuid.uuid4())
    result = {
        "jobId": job_id,
        "status": "IN_PROGRESS",
        "description": "In progress, check GET /rebalanceStatus/" + job_id,
        "instanceAssignment": {config.table_type: {"instances": servers}},
        "segmentAssignment": target,
        "rebalanceSummaryResult": _summary(ideal.segments, target),
    }
    if target == ideal.segments:
        result.update(status="NO_OP", description="Table is already balanced")
        return result
    if dry_run:
        result.update(status="DONE", description="Dry-run mode")
        return result
    running = running_rebalance_jobs(store, resource)
    if running:
        raise Conflict(
            f"a rebalance of {resource} is already in progress (job {running[0]}); wait for it "
            f"or cancel it with DELETE /tables/{row.table_name}/rebalance"
        )
    stats = {
        "status": "IN_PROGRESS",
        "startTimeMs": now_ms(),
        "timeToFinishInSeconds": 0,
        "completionStatusMsg": "",
        "downtime": downtime,
        "initialSegmentAssignment": ideal.segments,
        "targetSegmentAssignment": target,
    }
    runner = instance_id(
        InstanceType.CONTROLLER, settings.CONTROLLER_HOST, settings.CONTROLLER_PORT
    )
    save_job(store, REBALANCE, job_id, resource, {"jobId": job_id, "tableNameWithType": resource,
                                                  "controller": runner,
                                                  "tableRebalanceProgressStats": stats})  # fmt: skip
    if run_async:
        threading.Thread(
            target=run_rebalance, args=(store, job_id, resource, target, downtime),
            name=f"rebalance-{resource}", daemon=True,
        ).start()  # fmt: skip
    else:
        run_rebalance(store, job_id, resource, target, downtime)
    return result


def staying_segments(
    segments: dict[str, dict[str, str]], *, realtime: bool, include_consuming: bool
) -> dict:
    """The segments a rebalance leaves where they are (``assignment_group``), as Pinot's:
    with ``includeConsuming=false`` the consuming ones, and on a REALTIME table those no
    replica could consume (all OFFLINE), which the repair task recreates."""
    stay = {OFFLINE_GROUP} if realtime else set()
    if not include_consuming:
        stay.add(CONSUMING_GROUP)
    return {s: dict(r) for s, r in segments.items() if assignment_group(r) in stay}


def running_rebalance_jobs(store: ClusterStore, resource: str) -> list[str]:
    return [
        job_id
        for job_id in table_jobs(store, resource, [REBALANCE])
        if load_job(store, REBALANCE, job_id)["tableRebalanceProgressStats"]["status"]
        == "IN_PROGRESS"
    ]


def _summary(current: dict, target: dict) -> dict:
    moved = sum(len(set(target[s]) - set(current.get(s, {}))) for s in target)
    return {
        "numSegments": len(target),
        "numReplicasToAdd": moved,
        "numReplicasToRemove": sum(len(set(current[s]) - set(target.get(s, {}))) for s in current),
        "serversAfter": sorted({i for m in target.values() for i in m}),
        "serversBefore": sorted({i for m in current.values() for i in m}),
    }


def run_rebalance(
    store: ClusterStore, job_id: str, resource: str, target: dict, downtime: bool
) -> None:
    """Drive one rebalance job to DONE, FAILED or CANCELLED."""
    started = time.monotonic()
    try:
        if not downtime:
            _apply(store, resource, target, keep_old=True)
            _progress(store, job_id, "added new replicas; waiting for them to come online")
            if not _wait_until(
                store, job_id, resource, target, started, _not_online, "come online"
            ):
                return
        _apply(store, resource, target, keep_old=False)
        _progress(store, job_id, "dropped old replicas; waiting for the external view to converge")
        # DONE means the servers serve exactly the target: new replicas online, old ones unloaded
        if not _wait_until(store, job_id, resource, target, started, _not_converged, "converge"):
            return
        _finish(store, job_id, "DONE", "Success", started)
    except Exception as exc:  # the job record is the only place a background failure shows
        log.exception("rebalance %s of %s failed", job_id, resource)
        try:
            _finish(store, job_id, "FAILED", f"{type(exc).__name__}: {exc}", started)
        except ZooKeeperUnavailableError:
            log.warning("rebalance %s: cannot record the failure, ZooKeeper is unreachable", job_id)


def _apply(store: ClusterStore, resource: str, target: dict, *, keep_old: bool) -> None:
    def change(ideal: ResourceAssignment) -> ResourceAssignment:
        for segment, replicas in target.items():
            if segment not in ideal.segments:
                continue  # deleted meanwhile
            merged = dict(ideal.segments[segment]) if keep_old else {}
            merged.update(replicas)
            ideal.segments[segment] = merged
        return ideal

    store.update_ideal_state(resource, change, create=False)


def _wait_until(
    store, job_id: str, resource: str, target: dict, started: float, pending, what
) -> bool:
    """Poll the external view until ``pending(view, ideal, target)`` lists no replica. False
    when the job was cancelled or failed meanwhile, or when it timed out (then marked FAILED)."""
    deadline = started + settings.REBALANCE_STABILIZATION_TIMEOUT_S
    while True:
        status = load_job(store, REBALANCE, job_id)["tableRebalanceProgressStats"]["status"]
        if status != "IN_PROGRESS":  # cancelled, or failed by the reconcile task
            return False
        store.refresh_external_views([resource])
        view = store.external_view(resource)
        ideal = store.ideal_state(resource)
        left = pending(view.segments if view else {}, ideal.segments if ideal else {}, target)
        if not left:
            return True
        if time.monotonic() > deadline:
            _finish(store, job_id, "FAILED",
                    f"timed out waiting for {len(left)} replica(s) to {what}", started)  # fmt: skip
            return False
        time.sleep(settings.REBALANCE_CHECK_INTERVAL_S)


def _not_online(view: dict, ideal: dict, target: dict) -> list[tuple[str, str]]:
    """Target replicas (of segments still in the ideal state) not yet serving."""
    return [
        (segment, instance)
        for segment, replicas in target.items()
        if segment in ideal
        for instance in replicas
        if view.get(segment, {}).get(instance) not in SERVING_STATES
    ]


def _not_converged(view: dict, ideal: dict, target: dict) -> list[tuple[str, str]]:
    """Target replicas not yet serving, plus replicas still loaded outside the target."""
    extra = [
        (segment, instance)
        for segment in target
        if segment in ideal
        for instance in view.get(segment, {})
        if instance not in ideal[segment]
    ]
    return _not_online(view, ideal, target) + extra


def _progress(store, job_id: str, message: str) -> None:
    def change(body: dict) -> dict:
        body["tableRebalanceProgressStats"]["completionStatusMsg"] = message
        return body

    update_job(store, REBALANCE, job_id, change)


def _finish(store, job_id: str, status: str, message: str, started: float) -> None:
    def change(body: dict) -> dict:
        stats = body["tableRebalanceProgressStats"]
        if stats["status"] == "IN_PROGRESS":
            stats.update(status=status, completionStatusMsg=message,
                         timeToFinishInSeconds=round(time.monotonic() - started, 3))  # fmt: skip
        return body

    update_job(store, REBALANCE, job_id, change)


def rebalance_status(store: ClusterStore, job_id: str) -> dict:
    body = load_job(store, REBALANCE, job_id)
    stats = body["tableRebalanceProgressStats"]
    return {
        "jobId": job_id,
        "tableNameWithType": body.get("tableNameWithType"),
        "tableRebalanceProgressStats": stats,
        "timeElapsedSinceStartInSeconds": (now_ms() - stats["startTimeMs"]) // 1000,
    }


def cancel_rebalance(store: ClusterStore, table_with_type: str) -> list[str]:
    """Cancel the table's running rebalance jobs; returns their ids."""
    cancelled = []
    for job_id in table_jobs(store, table_with_type, [REBALANCE]):
        # ``change`` may run more than once (compare-and-set retries while the job's own
        # thread writes its progress), so only the attempt that lands decides
        outcome = {"cancelled": False}

        def change(body: dict, outcome: dict = outcome) -> dict:
            stats = body["tableRebalanceProgressStats"]
            outcome["cancelled"] = stats["status"] == "IN_PROGRESS"
            if outcome["cancelled"]:
                stats.update(status="CANCELLED", completionStatusMsg="cancelled by the user")
            return body

        update_job(store, REBALANCE, job_id, change)
        if outcome["cancelled"]:
            cancelled.append(job_id)
    return cancelled


def fail_orphaned_rebalances(store: ClusterStore) -> list[str]:
    """Mark FAILED the IN_PROGRESS rebalance jobs whose controller is no longer live (it was
    stopped mid-job); their tables can be rebalanced again. Returns the job ids."""
    live = set(store.live_instances())
    base = store.paths.controller_jobs(REBALANCE)
    failed = []
    for job_id in store.children(base):
        body = load_job(store, REBALANCE, job_id)
        stats = body["tableRebalanceProgressStats"]
        if stats["status"] != "IN_PROGRESS" or body.get("controller") in live:
            continue

        message = (
            f"controller {body.get('controller')} stopped during the rebalance; start it again"
        )

        def change(current: dict, message: str = message) -> dict:
            current["tableRebalanceProgressStats"].update(
                status="FAILED", completionStatusMsg=message
            )
            return current

        update_job(store, REBALANCE, job_id, change)
        failed.append(job_id)
    return failed
