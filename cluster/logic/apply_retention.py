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
from engine.clusterstate import ClusterStore
from engine.clusterstate.lineage import delete_blocked_segments, read_lineage
from engine.clusterstate.segment_status import is_completed
from engine.common.clock import now_ms
from engine.spi.datetime_format import UNIT_MILLIS
from engine.spi.periods import period_ms

# Pinot's TimeUtils valid range: an end time outside 1971..2071 is a wrong unit or a
# placeholder, never a reason to delete a segment
VALID_MIN_TIME_MS = 31_536_000_000  # 1971-01-01T00:00:00Z
VALID_MAX_TIME_MS = 3_187_296_000_000  # 2071-01-01T00:00:00Z


def purgeable_end_ms(meta) -> int | float | None:
    """The end time retention judges a segment by (Pinot's TimeRetentionStrategy): its end
    time in epoch ms, or None when that is unknown (no time, no or no known unit) or outside
    Pinot's valid range; such a segment is kept."""
    end = meta.end_time_ms
    return end if end is not None and VALID_MIN_TIME_MS <= end <= VALID_MAX_TIME_MS else None


def expired_segments(store: ClusterStore, row, now: int) -> list[str]:
    """Segments of one table type whose end time is before ``now - retention`` (strictly)."""
    config = parsed(row)
    segments_config = config.segments_config
    if not segments_config.retention_time_unit or segments_config.retention_time_value is None:
        return []
    retention = (
        segments_config.retention_time_value * UNIT_MILLIS[segments_config.retention_time_unit]
    )
    cutoff = now - retention
    realtime = row.table_type == "REALTIME"
    # read before the metadata: a commit in between is then seen as still consuming
    ideal = store.ideal_state(row.name_with_type) if realtime else None
    replicas = ideal.segments if ideal else {}
    expired = []
    for segment in store.segment_names(row.name_with_type):
        meta = store.segment_metadata(row.name_with_type, segment)
        if meta is None or (realtime and not is_completed(meta, replicas.get(segment, {}))):
            continue
        end = purgeable_end_ms(meta)
        if end is not None and end < cutoff:
            expired.append(segment)
    return expired


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
