"""The RetentionManager's lineage clean-up (Pinot's DefaultLineageManager.updateLineageForRetention).

Per entry of a table's segment lineage:

- COMPLETED: its segmentsFrom are deleted once the entry is older than
  ``segmentsConfig.replacedSegmentsRetentionPeriod`` (default 1d; kept that long so the swap can
  be reverted); the entry goes once none of them is left.
- REVERTED, or IN_PROGRESS and older than ``segmentsConfig.lineageEntryCleanupRetentionPeriod``
  (default 1d; a replacement its uploader abandoned): its segmentsTo are deleted, except names
  a live entry has taken over; the entry goes once none of them is left.

The lineage is written first and the segments deleted after, so a crash in between leaves
segments that the next run deletes, never an entry that points at deleted segments. An entry
is dropped only when its segments are gone from the external view too, so a broker never sees
the segments without the entry that hides them.
"""

from __future__ import annotations

import logging

from cluster.logic.delete_segments import delete_segments
from cluster.logic.segment_lineage import table_segments
from cluster.periods import period_ms
from engine.clusterstate import ClusterStore
from engine.clusterstate.lineage import (
    LineageEntryState,
    SegmentLineage,
    read_lineage,
    update_lineage,
)

log = logging.getLogger(__name__)

DEFAULT_RETENTION_MS = 86_400_000  # Pinot's 1 day for both periods


def retention_periods_ms(segments_config: dict, table: str) -> tuple[int, int]:
    """(replaced-segments retention, abandoned-entry retention) in ms from ``segmentsConfig``;
    a bad period string is logged and the default used, as Pinot does."""
    out = []
    for key in ("replacedSegmentsRetentionPeriod", "lineageEntryCleanupRetentionPeriod"):
        value = segments_config.get(key)
        if value in (None, ""):
            out.append(DEFAULT_RETENTION_MS)
            continue
        try:
            out.append(period_ms(value))
        except ValueError as exc:
            log.warning("table %s: segmentsConfig.%s: %s; using 1d", table, key, exc)
            out.append(DEFAULT_RETENTION_MS)
    return out[0], out[1]


def clean_up_lineage(store: ClusterStore, table: str, segments_config: dict, now: int) -> list[str]:
    """Apply the rules above to one table type; the segments deleted."""
    if read_lineage(store, table) is None:
        return []
    replaced_ms, abandoned_ms = retention_periods_ms(segments_config, table)
    present = table_segments(store, table)
    view = store.external_view(table)
    served = set(view.segments) if view else set()
    doomed: set[str] = set()

    def change(lineage: SegmentLineage) -> SegmentLineage | None:
        doomed.clear()
        changed = False
        for entry_id, entry in list(lineage.entries.items()):
            if entry.state is LineageEntryState.COMPLETED:
                hidden = set(entry.segments_from)
                expired = entry.timestamp < now - replaced_ms
            elif entry.state is LineageEntryState.REVERTED or entry.timestamp < now - abandoned_ms:
                hidden = set(entry.segments_to) - _taken(lineage, entry_id)
                expired = True
            else:
                continue  # an IN_PROGRESS replacement still within its time
            if hidden & (present | served):
                if expired:
                    doomed.update(hidden & present)
            else:
                del lineage.entries[entry_id]
                changed = True
        return lineage if changed else None

    update_lineage(store, table, change)
    if not doomed:
        return []
    still = doomed & table_segments(store, table)  # another delete may have run meanwhile
    deleted = delete_segments(store, table, sorted(still), lineage_managed=True)
    log.info("lineage clean-up of %s deleted %s", table, deleted)
    return deleted


def _taken(lineage: SegmentLineage, entry_id: str) -> set[str]:
    """segmentsTo of the other live entries: a later replacement reused those names."""
    return {
        s
        for other_id, other in lineage.entries.items()
        if other_id != entry_id and other.is_live
        for s in other.segments_to
    }
