"""Controller jobs (rebalance, reload, force commit) in ``PROPERTYSTORE/CONTROLLER_JOBS/<jobType>/<jobId>``,
readable from any controller."""

from __future__ import annotations

import orjson

from controller.errors import NotFound
from engine.clusterstate import ClusterStore, ZNRecord
from engine.common.clock import now_ms

REBALANCE = "TABLE_REBALANCE"
RELOAD = "RELOAD_SEGMENT"
FORCE_COMMIT = "FORCE_COMMIT"
JOB_TYPES = (REBALANCE, RELOAD, FORCE_COMMIT)


def save_job(store: ClusterStore, job_type: str, job_id: str, table: str, body: dict) -> dict:
    record = ZNRecord(
        id=job_id,
        simple_fields={
            "jobId": job_id,
            "jobType": job_type,
            "tableName": table,
            "submissionTimeMs": str(body.get("submissionTimeMs", now_ms())),
            "body": orjson.dumps(body).decode(),
        },
    )
    store.put_record(store.paths.controller_job(job_type, job_id), record)
    return body


def load_job(store: ClusterStore, job_type: str, job_id: str) -> dict:
    record, _ = store.get_record(store.paths.controller_job(job_type, job_id))
    if record is None:
        raise NotFound(f"{job_type} job {job_id} not found")
    return orjson.loads(record.simple_fields["body"])


def update_job(store: ClusterStore, job_type: str, job_id: str, change) -> dict:
    """Apply ``change(body) -> body`` atomically to a job's body."""
    path = store.paths.controller_job(job_type, job_id)

    def on_record(record: ZNRecord | None) -> ZNRecord | None:
        if record is None:
            return None
        body = change(orjson.loads(record.simple_fields["body"]))
        record.simple_fields["body"] = orjson.dumps(body).decode()
        return record

    record = store.update(path, on_record)
    if record is None:
        raise NotFound(f"{job_type} job {job_id} not found")
    return orjson.loads(record.simple_fields["body"])


def table_jobs(store: ClusterStore, table_with_type: str, job_types: list[str]) -> dict:
    """jobId -> job summary for one table (``GET /table/{t}/jobs``)."""
    out = {}
    for job_type in job_types:
        base = store.paths.controller_jobs(job_type)
        for job_id in store.children(base):
            record, _ = store.get_record(f"{base}/{job_id}")
            if record is not None and record.simple_fields.get("tableName") == table_with_type:
                fields = dict(record.simple_fields)
                fields.pop("body", None)
                out[job_id] = fields
    return out
