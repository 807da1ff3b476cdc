"""Reload and reset (``POST /segments/{t}/reload``, ``/reset``): messages to the servers that
hold the segments (``INSTANCES/<id>/MESSAGES``); a server deletes a message once handled."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from cluster import models
from cluster.logic import audit
from cluster.logic.controller_jobs import RELOAD, load_job, save_job
from cluster.logic.realtime.consuming_info import ask_server
from cluster.logic.table_views import existing_types
from controller.errors import NotFound
from engine.clusterstate import (
    ClusterStore,
    Message,
    SegmentState,
    split_table_name,
    table_name_with_type,
)
from engine.common.clock import now_ms


def _targets(store: ClusterStore, resource: str, segment: str | None) -> list[tuple[str, str]]:
    ideal = store.ideal_state(resource)
    segments = ideal.segments if ideal else {}
    if segment is not None:
        if segment not in segments:
            raise NotFound(f"Segment {segment} of table {resource} not found")
        segments = {segment: segments[segment]}
    return [(s, i) for s, replicas in sorted(segments.items()) for i in sorted(replicas)]


def reload_segments(
    store: ClusterStore,
    table: str,
    table_type: str | None,
    segment: str | None = None,
    *,
    force_download: bool = False,
) -> dict:
    """Send SEGMENT_RELOAD messages; returns Pinot's ``{resource: {reloadJobId,
    numMessagesSent}}``."""
    raw = split_table_name(table)[0]
    out = {}
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)
        job_id = str(uuid.uuid4())
        sent = []
        for seg, instance in _targets(store, resource, segment):
            message_id = f"{job_id}-{len(sent)}"
            extra = {"forceDownload": str(force_download).lower(), "reloadJobId": job_id}
            store.send_message(
                instance, Message(message_id, "SEGMENT_RELOAD", resource, seg, extra)
            )
            sent.append({"instance": instance, "segment": seg, "messageId": message_id})
        save_job(store, RELOAD, job_id, resource, {
            "jobId": job_id, "tableNameWithType": resource, "segmentName": segment or "",
            "submissionTimeMs": now_ms(), "messages": sent,
        })  # fmt: skip
        audit.record("segment.reload", "table", resource, segment=segment or "", job=job_id)
        out[resource] = {
            "reloadJobId": job_id,
            "reloadJobMetaZKStorageStatus": "SUCCESS",
            "numMessagesSent": str(len(sent)),
        }
    return out


def reload_status(store: ClusterStore, job_id: str) -> dict:
    """Messages still waiting in a server's queue are unfinished; the rest were handled."""
    job = load_job(store, RELOAD, job_id)
    pending = 0
    for sent in job["messages"]:
        if store.stat(store.paths.message(sent["instance"], sent["messageId"])) is not None:
            pending += 1
    total = len(job["messages"])
    return {
        "totalSegmentCount": total,
        "successCount": total - pending,
        "pendingCount": pending,
        "timeElapsedInMinutes": round((now_ms() - job["submissionTimeMs"]) / 60000, 3),
        "estimatedTimeRemainingInMinutes": 0 if pending == 0 else -1,
        "metadata": {k: v for k, v in job.items() if k != "messages"},
    }


def reset_segments(
    store: ClusterStore,
    table: str,
    table_type: str | None,
    segment: str | None = None,
    *,
    target_instance: str | None = None,
    error_only: bool = False,
) -> dict:
    """Send SEGMENT_RESET (ERROR -> OFFLINE -> ONLINE) to the replicas, or only those in ERROR
    in the external view when ``error_only``."""
    raw = split_table_name(table)[0]
    count = 0
    resources = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)
        view = store.external_view(resource)
        for seg, instance in _targets(store, resource, segment):
            if target_instance and instance != target_instance:
                continue
            state = (view.segments.get(seg, {}) if view else {}).get(instance)
            if error_only and state != SegmentState.ERROR.value:
                continue
            store.send_message(instance, Message(uuid.uuid4().hex, "SEGMENT_RESET", resource, seg))
            count += 1
        resources.append(resource)
        audit.record("segment.reset", "table", resource, segment=segment or "")
    return {
        "status": f"Successfully reset {count} replica(s) of table(s) {', '.join(resources)}",
        "numMessagesSent": count,
    }


def reload_schema_tables(store: ClusterStore, schema_name: str) -> dict:
    """Reload every table type whose schema is ``schema_name`` (after a schema change)."""
    out = {}
    for row in models.TableConfig.objects.all():
        if (row.config.get("segmentsConfig") or {}).get(
            "schemaName", row.table_name
        ) == schema_name:
            out.update(reload_segments(store, row.table_name, row.table_type))
    return out


def need_reload(store: ClusterStore, table: str, *, verbose: bool, timeout_s: float = 10.0) -> dict:
    """Pinot's ``GET /segments/{t}/needReload``: whether any server holding the table has a
    segment lacking a column of the current schema (``needReload`` on its admin port). A
    server that does not answer counts as needing one; ``verbose`` lists each server."""
    raw, table_type = split_table_name(table)
    servers: set[str] = set()
    for kind in existing_types(table, table_type):
        ideal = store.ideal_state(table_name_with_type(raw, kind))
        for replicas in (ideal.segments if ideal else {}).values():
            servers.update(replicas)
    if not servers:
        raise NotFound(f"Table {table} has no segments")
    urls = {}
    for server in sorted(servers):
        config = store.instance_config(server)
        if config is not None and config.admin_port > 0:
            urls[server] = (
                f"http://{config.host}:{config.admin_port}/tables/{table}/segments/needReload"
            )
    with ThreadPoolExecutor(max_workers=min(16, len(urls) or 1)) as pool:
        answers = dict(
            zip(
                urls,
                pool.map(lambda url: ask_server(url, timeout_s)[0], urls.values()),
                strict=True,
            )
        )
    per_server = {}
    for server in sorted(servers):
        answer = answers.get(server)
        if isinstance(answer, dict) and isinstance(answer.get("needReload"), bool):
            per_server[server] = {"needReload": answer["needReload"], "instanceId": server}
        else:
            per_server[server] = {"needReload": True, "instanceId": server,
                                  "error": "the server did not answer"}  # fmt: skip
    return {
        "needReload": any(entry["needReload"] for entry in per_server.values()),
        "serverToSegmentsCheckReloadList": per_server if verbose else {},
    }
