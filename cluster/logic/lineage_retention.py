"""The RetentionManager's lineage clean-up (Pinot's DefaultLineageManager.updateLineageForRetention).

Per entry of a table's segment lineage:

- COMPLETED: its segmentsFrom are deleted once the entry is older than
  ``segmentsConfig.replacedSegmentsRetentionPeriod`` (default 1d; kept that long so the swap can
  be reverted), and only while every segmentsTo is in the table and ONLINE in the external view
  (or itself replaced by a later COMPLETED entry whose outputs are): otherwise deleting them
  would lose rows, so they are kept, a warning logged, and the next run tries again. The entry
  goes once none of them is left.
- IN_PROGRESS and older than ``segmentsConfig.lineageEntryCleanupRetentionPeriod`` (default 1d;
  a replacement its uploader abandoned): reverted (REVERTED, timestamped now), and handled as
  one from then on.
- REVERTED: its segmentsTo are deleted, except names a live entry has taken over. The entry is
  kept while any of them is in the table or the external view: it goes on hiding those names
  from the brokers, so a late upload by the abandoned uploader is never served next to the
  segmentsFrom (rows counted twice) but deleted by the next run.

The lineage is written first and the segments deleted after, so a crash in between leaves
segments that the next run deletes, never an entry that points at deleted segments. An entry
is dropped only when its segments are gone from the external view too, so a broker never sees
the segments without the entry that hides them.
"""

from __future__ import annotations

import logging

from cluster.logic.delete_segments import delete_segments
from cluster.logic.segment_lineage import online_segments, table_segments
from engine.clusterstate import ClusterStore
from engine.clusterstate.lineage import (
    LineageEntryState,
    SegmentLineage,
    read_lineage,
    update_lineage,
)
from engine.spi.periods import period_ms

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
    landed = present & online_segments(store, table)
    doomed: set[str] = set()
    waiting: dict[str, list[str]] = {}

    def change(lineage: SegmentLineage) -> SegmentLineage | None:
        doomed.clear()
        waiting.clear()
        changed = False
        for entry_id, entry in list(lineage.entries.items()):
            if entry.state is LineageEntryState.IN_PROGRESS:
                if entry.timestamp >= now - abandoned_ms:
                    continue  # a replacement still within its time
                # reverted, not dropped: the entry must go on hiding its segmentsTo
                entry = entry.with_state(LineageEntryState.REVERTED, now)
                lineage.entries[entry_id] = entry
                changed = True
            if entry.state is LineageEntryState.COMPLETED:
                hidden = set(entry.segments_from)
                if not hidden & (present | served):
                    del lineage.entries[entry_id]
                    changed = True
                elif entry.timestamp < now - replaced_ms:
                    missing = _not_landed(lineage, entry_id, landed, set())
                    if missing:
                        waiting[entry_id] = sorted(missing)
                    else:
                        doomed.update(hidden & present)
                continue
            hidden = set(entry.segments_to) - _taken(lineage, entry_id)
            if hidden & (present | served):
                doomed.update(hidden & present)
            else:
                del lineage.entries[entry_id]
                changed = True
        return lineage if changed else None

    update_lineage(store, table, change)
    for entry_id, missing in waiting.items():
        log.warning("lineage clean-up of %s keeps the segmentsFrom of entry %s: its segmentsTo "
                    "%s are not all in the table and ONLINE; retrying on the next run",
                    table, entry_id, missing)  # fmt: skip
    if not doomed:
        return []
    still = doomed & table_segments(store, table)  # another delete may have run meanwhile
    deleted = delete_segments(store, table, sorted(still), lineage_managed=True)
    log.info("lineage clean-up of %s deleted %s", table, deleted)
    return deleted


def _not_landed(
    lineage: SegmentLineage, entry_id: str, landed: set[str], seen: set[str]
) -> set[str]:
    """segmentsTo of a COMPLETED entry not holding its rows: neither in the table and ONLINE
    nor replaced in turn by a COMPLETED entry whose own segmentsTo hold them."""
    seen.add(entry_id)
    missing = set()
    for segment in lineage.entries[entry_id].segments_to:
        if segment in landed:
            continue
        onward = [
            other_id
            for other_id, other in lineage.entries.items()
            if other.state is LineageEntryState.COMPLETED and segment in other.segments_from
        ]
        if not onward or any(o in seen or _not_landed(lineage, o, landed, seen) for o in onward):
            missing.add(segment)
    return missing


def _taken(lineage: SegmentLineage, entry_id: str) -> set[str]:
    """segmentsTo of the other live entries: a later replacement reused those names."""
    return {
        s
        for other_id, other in lineage.entries.items()
        if other_id != entry_id and other.is_live
        for s in other.segments_to
    }
