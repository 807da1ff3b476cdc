"""RetentionManager's work: delete segments whose end time is older than the table's
``retentionTimeValue``/``retentionTimeUnit``, clean up the segment lineage
(``lineage_retention``) and purge expired Deleted_Segments files.

On a REALTIME table only completed segments (status DONE, or UPLOADED for a pushed one) are
candidates, judged by the end time in their ZK metadata: a CONSUMING (IN_PROGRESS) or
COMMITTING segment is still being written, and the partition's next segment starts from it."""

from __future__ import annotations

from django.conf import settings

from cluster.logic.cluster_view import parsed
from cluster.logic.deep_store import get_deep_store
from cluster.logic.delete_segments import delete_segments
from cluster.logic.lineage_retention import clean_up_lineage
from engine.clusterstate import ClusterStore, SegmentState
from engine.clusterstate.lineage import delete_blocked_segments, read_lineage
from engine.clusterstate.realtime_metadata import COMPLETED, status_of
from engine.clusterstate.records import now_ms
from engine.spi.periods import period_ms

_UNIT_MS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}


def end_time_ms(end_time: int | None, time_unit: str) -> int | None:
    """A segment's end time (in ``time_unit``, Pinot's segment.time.unit) as epoch ms."""
    if end_time is None:
        return None
    return end_time * _UNIT_MS.get((time_unit or "MILLISECONDS").upper(), 1)


def expired_segments(store: ClusterStore, row, now: int) -> list[str]:
    """Segments of one table type whose end time is before ``now - retention`` (strictly)."""
    config = parsed(row)
    segments_config = config.segments_config
    if not segments_config.retention_time_unit or segments_config.retention_time_value is None:
        return []
    retention = segments_config.retention_time_value * _UNIT_MS[segments_config.retention_time_unit]
    cutoff = now - retention
    realtime = row.table_type == "REALTIME"
    consuming = _consuming_segments(store, row.name_with_type) if realtime else set()
    expired = []
    for segment in store.segment_names(row.name_with_type):
        meta = store.segment_metadata(row.name_with_type, segment)
        if meta is None or (
            realtime and (status_of(meta) not in COMPLETED or segment in consuming)
        ):
            continue
        end = end_time_ms(meta.end_time, meta.time_unit)
        if end is not None and end < cutoff:
            expired.append(segment)
    return expired


def _consuming_segments(store: ClusterStore, table: str) -> set[str]:
    """Segments with a CONSUMING replica in the ideal state: a commit writes DONE before it
    moves the ideal state, and such a segment is still served from memory."""
    ideal = store.ideal_state(table)
    return {
        segment
        for segment, replicas in (ideal.segments if ideal else {}).items()
        if SegmentState.CONSUMING.value in replicas.values()
    }


def apply_retention(store: ClusterStore, rows, now: int | None = None) -> dict:
    """Delete expired segments of ``rows`` (TableConfig rows); returns table -> deleted."""
    now = now if now is not None else now_ms()
    deleted, by_lineage = {}, {}
    for row in rows:
        table = row.name_with_type
        # a segment in a live lineage entry is left to the lineage clean-up (Pinot #18518)
        blocked = delete_blocked_segments(read_lineage(store, table))
        expired = [s for s in expired_segments(store, row, now) if s not in blocked]
        if expired:
            deleted[table] = delete_segments(store, table, expired)
        cleaned = clean_up_lineage(store, table, row.config.get("segmentsConfig") or {}, now)
        if cleaned:
            by_lineage[table] = cleaned
    purged = get_deep_store().purge_deleted(period_ms(settings.DELETED_SEGMENTS_RETENTION), now)
    return {"deletedSegments": deleted, "deletedByLineage": by_lineage,
            "purgedDeletedSegmentFiles": len(purged)}  # fmt: skip
