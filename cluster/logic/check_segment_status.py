"""SegmentStatusChecker's work: per table, the replicas online per segment and the segments in
ERROR, saved as gauges in ``PROPERTYSTORE/CONTROLLER_METRICS/<table_TYPE>``."""

from __future__ import annotations

import orjson

from engine.clusterstate import SERVING_STATES, ClusterStore, SegmentState, ZNRecord
from engine.common.clock import now_ms


def table_status(store: ClusterStore, resource: str) -> dict:
    """Pinot's gauges: numberOfReplicas (the fewest replicas online of any segment),
    percentOfReplicas, percentSegmentsAvailable, segmentsInErrorState; plus per segment."""
    ideal = store.ideal_state(resource)
    view = store.external_view(resource)
    segments = ideal.segments if ideal else {}
    online_per_segment, error_segments = {}, []
    expected_total = online_total = available = 0
    for segment, replicas in sorted(segments.items()):
        seen = view.segments.get(segment, {}) if view else {}
        online = sum(1 for i in replicas if seen.get(i) in SERVING_STATES)
        online_per_segment[segment] = online
        if SegmentState.ERROR.value in seen.values():
            error_segments.append(segment)
        expected_total += len(replicas)
        online_total += online
        available += 1 if online else 0
    count = len(segments)
    return {
        "tableNameWithType": resource,
        "checkedAtMs": now_ms(),
        "segmentCount": count,
        "numberOfReplicas": min(online_per_segment.values()) if count else 0,
        "percentOfReplicas": round(100.0 * online_total / expected_total, 2)
        if expected_total
        else 100.0,
        "percentSegmentsAvailable": round(100.0 * available / count, 2) if count else 100.0,
        "segmentsInErrorState": len(error_segments),
        "errorSegments": error_segments,
        "replicasOnlinePerSegment": online_per_segment,
    }


def check_segment_status(store: ClusterStore, resources: list[str]) -> dict:
    out = {}
    for resource in resources:
        status = table_status(store, resource)
        record = ZNRecord(
            id=resource,
            simple_fields={
                k: str(v)
                for k, v in status.items()
                if k not in ("errorSegments", "replicasOnlinePerSegment")
            },
            map_fields={
                "replicasOnlinePerSegment": {
                    k: str(v) for k, v in status["replicasOnlinePerSegment"].items()
                }
            },
            list_fields={"errorSegments": status["errorSegments"]},
        )
        store.put_record(store.paths.table_status_of(resource), record)
        out[resource] = status
    return out


def saved_status(store: ClusterStore, resource: str) -> dict | None:
    """The last report of the checker for ``resource``, or None if it never ran."""
    record, _ = store.get_record(store.paths.table_status_of(resource))
    if record is None:
        return None
    out: dict = {}
    for key, value in record.simple_fields.items():
        try:
            out[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key] = value
    out["errorSegments"] = record.list_fields.get("errorSegments", [])
    out["replicasOnlinePerSegment"] = {
        k: int(v) for k, v in record.map_fields.get("replicasOnlinePerSegment", {}).items()
    }
    return out
