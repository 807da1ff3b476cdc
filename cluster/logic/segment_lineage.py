"""The segment replacement protocol (Pinot's startReplaceSegments / endReplaceSegments /
revertReplaceSegments): swap segmentsFrom for segmentsTo so that every query sees one or the
other, never both or neither.

1. ``start_replace_segments`` records an IN_PROGRESS lineage entry. Brokers keep routing
   segmentsFrom and hide segmentsTo, so the new segments can be uploaded at leisure.
2. ``end_replace_segments`` marks it COMPLETED once every segmentsTo is ONLINE. Brokers switch
   to segmentsTo at once; segmentsFrom stay in the table (for a revert) until retention
   deletes them after ``segmentsConfig.replacedSegmentsRetentionPeriod`` (``lineage_retention``).
3. ``revert_replace_segments`` marks it REVERTED: brokers route segmentsFrom again, and
   segmentsTo are deleted.

Every change is a compare-and-set on the lineage znode (``engine.clusterstate.lineage``), and
segments are deleted only after the lineage that releases them has been written.
"""

from __future__ import annotations

import time
import uuid

from cluster.logic import audit
from cluster.logic.delete_segments import delete_segments
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore, SegmentState
from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    read_lineage,
    update_lineage,
)
from engine.common.clock import now_ms

IN_PROGRESS = LineageEntryState.IN_PROGRESS
COMPLETED = LineageEntryState.COMPLETED
REVERTED = LineageEntryState.REVERTED

# How long endReplaceSegments waits for segmentsTo to come ONLINE before answering 409 (the
# caller retries). Pinot waits up to 10 minutes; a request thread should not.
ONLINE_WAIT_S = 30.0


def table_segments(store: ClusterStore, table: str) -> set[str]:
    """Segments the table holds: in its ideal state or with ZooKeeper metadata."""
    ideal = store.ideal_state(table)
    return set(store.segment_names(table)) | set(ideal.segments if ideal else ())


def online_segments(store: ClusterStore, table: str) -> set[str]:
    """Segments with at least one ONLINE replica in the external view."""
    view = store.external_view(table)
    online = SegmentState.ONLINE.value
    return {
        s for s, replicas in (view.segments if view else {}).items() if online in replicas.values()
    }


def validate_segment_names(field: str, names: list[str]) -> list[str]:
    """Distinct, non-empty names without ``,`` (the lineage record joins them with commas)."""
    seen = set()
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise BadRequest(f"{field}: segment names must be non-empty strings")
        if "," in name or "/" in name:
            raise BadRequest(f"{field}: segment name {name!r} must not contain ',' or '/'")
        if name in seen:
            raise BadRequest(f"{field}: segment {name} is listed twice")
        seen.add(name)
    return list(names)


def _entry(lineage: SegmentLineage, entry_id: str) -> LineageEntry:
    entry = lineage.entries.get(entry_id)
    if entry is None:
        raise NotFound(
            f"Segment lineage entry {entry_id} of table {lineage.table_name_with_type} not found"
        )
    return entry


def _claimed_targets(lineage: SegmentLineage, *, besides: str | None = None) -> set[str]:
    """segmentsTo of live (IN_PROGRESS or COMPLETED) entries other than ``besides``."""
    return {
        s
        for entry_id, entry in lineage.entries.items()
        if entry.is_live and entry_id != besides
        for s in entry.segments_to
    }


# --- start -----------------------------------------------------------------------------------
def start_replace_segments(
    store: ClusterStore,
    table: str,
    segments_from: list[str],
    segments_to: list[str],
    *,
    force_cleanup: bool = False,
) -> str:
    """Record an IN_PROGRESS entry replacing ``segments_from`` by ``segments_to``; its id.

    Refused (409) when a segmentsFrom is already being (or was) replaced by a live entry, or a
    segmentsTo is another live entry's target or a visible segment of the table. With
    ``force_cleanup`` a conflicting IN_PROGRESS entry (a failed earlier attempt) is reverted
    instead and its uploaded segmentsTo are deleted, unless they are reused here."""
    validate_segment_names("segmentsFrom", segments_from)
    validate_segment_names("segmentsTo", segments_to)
    if not segments_from and not segments_to:
        raise BadRequest("segmentsFrom and segmentsTo are both empty: nothing to replace")
    both = sorted(set(segments_from) & set(segments_to))
    if both:
        raise BadRequest(f"segments {both} are in both segmentsFrom and segmentsTo")
    present = table_segments(store, table)
    missing = sorted(set(segments_from) - present)
    if missing:
        raise NotFound(f"segmentsFrom {missing} are not segments of table {table}")
    wanted_from, wanted_to = set(segments_from), set(segments_to)
    entry_id = str(uuid.uuid4())
    cleanup: set[str] = set()

    def change(lineage: SegmentLineage) -> SegmentLineage:
        cleanup.clear()
        now = now_ms()
        hidden = {
            s for e in lineage.entries.values() if e.state is not COMPLETED for s in e.segments_to
        }
        unserved = sorted(wanted_from & hidden)
        if unserved:
            raise Conflict(f"segmentsFrom {unserved} of table {table} are the unfinished or "
                           "reverted target of another replacement")  # fmt: skip
        for other_id, other in list(lineage.entries.items()):
            overlap_from = wanted_from & set(other.segments_from)
            overlap_to = wanted_to & set(other.segments_to)
            if not other.is_live:
                if overlap_to:  # the name now belongs to the new entry: stop hiding it here
                    lineage.entries[other_id] = _without_targets(other, wanted_to)
                continue
            if not (overlap_from or overlap_to):
                continue
            if force_cleanup and other.state is IN_PROGRESS:
                reverted = _without_targets(other, wanted_to).with_state(REVERTED, now)
                lineage.entries[other_id] = reverted
                cleanup.update(reverted.segments_to)
                continue
            hint = " (pass forceCleanup=true to revert it)" if other.state is IN_PROGRESS else ""
            if overlap_from:
                raise Conflict(
                    f"segmentsFrom {sorted(overlap_from)} of table {table} are already replaced "
                    f"by lineage entry {other_id} ({other.state}){hint}"
                )
            raise Conflict(
                f"segmentsTo {sorted(overlap_to)} of table {table} are already the target of "
                f"lineage entry {other_id} ({other.state}){hint}"
            )
        visible = sorted((wanted_to & present) - hidden)
        if visible:
            raise Conflict(
                f"segmentsTo {visible} already exist in table {table} and are being served; "
                "a replacement must upload new segments"
            )
        lineage.entries[entry_id] = LineageEntry(
            tuple(segments_from), tuple(segments_to), IN_PROGRESS, now
        )
        return lineage

    update_lineage(store, table, change)
    _delete_unclaimed(store, table, cleanup)
    audit.record("lineage.start", "table", table, entryId=entry_id,
                 segmentsFrom=segments_from, segmentsTo=segments_to)  # fmt: skip
    return entry_id


def _delete_unclaimed(store: ClusterStore, table: str, names: set[str]) -> None:
    """Delete the reverted targets ``names`` that no live entry has claimed since.

    The lineage is read again here rather than taken from the write that reverted them: a
    retried subtask's start (forceCleanup) may reclaim a name between that write and this
    delete, and deleting it then would remove the retry's upload, so that its entry could
    complete on a view that still showed the old copy ONLINE and lose the rows later."""
    if not names:
        return
    claimed = _claimed_targets(read_lineage(store, table) or SegmentLineage(table))
    stale = (names & table_segments(store, table)) - claimed
    if stale:
        delete_segments(store, table, sorted(stale), lineage_managed=True)


def _without_targets(entry: LineageEntry, names: set[str]) -> LineageEntry:
    kept = tuple(s for s in entry.segments_to if s not in names)
    return LineageEntry(entry.segments_from, kept, entry.state, entry.timestamp)


# --- end -------------------------------------------------------------------------------------
def end_replace_segments(
    store: ClusterStore,
    table: str,
    entry_id: str,
    *,
    segments_to: list[str] | None = None,
    online_wait_s: float | None = None,
) -> LineageEntryState:
    """Mark the entry COMPLETED once all its segmentsTo are ONLINE (a COMPLETED entry is left
    as it is, so a retried call succeeds). 404 for an unknown entry; 409 if it was reverted,
    if a segmentsTo was never uploaded or stays not ONLINE, or a segmentsFrom is gone."""
    lineage = read_lineage(store, table) or SegmentLineage(table)
    entry = _entry(lineage, entry_id)
    if segments_to is not None and set(segments_to) != set(entry.segments_to):
        # Pinot lets end rename the targets; here segments the entry did not hide while they
        # were uploaded were visible to queries, so the swap was not atomic
        raise BadRequest(f"segmentsTo {sorted(segments_to)} differ from those of lineage entry "
                         f"{entry_id} ({sorted(entry.segments_to)}), fixed at start")  # fmt: skip
    if entry.state is COMPLETED:
        return COMPLETED
    _check_endable(table, entry_id, entry)
    present = table_segments(store, table)
    not_uploaded = sorted(set(entry.segments_to) - present)
    if not_uploaded:
        raise Conflict(f"segmentsTo {not_uploaded} of lineage entry {entry_id} are not "
                       f"uploaded to table {table}")  # fmt: skip
    gone = sorted(set(entry.segments_from) - present)
    if gone:
        # completing would bring back, through segmentsTo, rows deleted with these
        raise Conflict(f"segmentsFrom {gone} of lineage entry {entry_id} were deleted from "
                       f"table {table}; revert the entry instead")  # fmt: skip
    wait_s = ONLINE_WAIT_S if online_wait_s is None else online_wait_s
    _wait_online(store, table, entry_id, set(entry.segments_to), wait_s)

    def change(current: SegmentLineage) -> SegmentLineage | None:
        latest = _entry(current, entry_id)
        if latest.state is COMPLETED:
            return None
        _check_endable(table, entry_id, latest)
        current.entries[entry_id] = latest.with_state(COMPLETED, now_ms())
        return current

    update_lineage(store, table, change)
    audit.record("lineage.end", "table", table, entryId=entry_id)
    return COMPLETED


def _check_endable(table: str, entry_id: str, entry: LineageEntry) -> None:
    if entry.state is REVERTED:
        raise Conflict(f"lineage entry {entry_id} of table {table} was reverted and cannot be "
                       "completed; start a new replacement")  # fmt: skip


def _wait_online(
    store: ClusterStore, table: str, entry_id: str, wanted: set[str], wait_s: float
) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        pending = wanted - online_segments(store, table)
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise Conflict(f"segmentsTo {sorted(pending)} of lineage entry {entry_id} are not "
                           f"ONLINE on any server of table {table} after {wait_s:g} s; retry "
                           "when they are")  # fmt: skip
        time.sleep(0.2)


# --- revert ----------------------------------------------------------------------------------
def revert_replace_segments(
    store: ClusterStore, table: str, entry_id: str, *, force_revert: bool = False
) -> LineageEntryState:
    """Mark the entry REVERTED, so queries use its segmentsFrom again.

    A COMPLETED entry needs its segmentsFrom still ONLINE and no live entry replacing its
    segmentsTo; an IN_PROGRESS one needs ``force_revert`` (its uploader may still be working).
    The segmentsTo of an IN_PROGRESS entry, never served, are deleted at once; those of a
    COMPLETED entry were being served, so retention deletes them on its next run, after the
    brokers have moved off them."""
    lineage = read_lineage(store, table) or SegmentLineage(table)
    entry = _entry(lineage, entry_id)
    _check_revertable(table, entry_id, entry, lineage, force_revert)
    if entry.state is COMPLETED:
        offline = sorted(set(entry.segments_from) - online_segments(store, table))
        if offline:
            raise Conflict(f"cannot revert lineage entry {entry_id}: segmentsFrom {offline} "
                           f"are not ONLINE in table {table}")  # fmt: skip
    was = entry.state

    def change(current: SegmentLineage) -> SegmentLineage:
        latest = _entry(current, entry_id)
        _check_revertable(table, entry_id, latest, current, force_revert)
        if latest.state is not was:
            raise Conflict(f"lineage entry {entry_id} of table {table} changed to "
                           f"{latest.state} meanwhile; retry")  # fmt: skip
        current.entries[entry_id] = latest.with_state(REVERTED, now_ms())
        return current

    update_lineage(store, table, change)
    if was is IN_PROGRESS:
        _delete_unclaimed(store, table, set(entry.segments_to))
    audit.record("lineage.revert", "table", table, entryId=entry_id, previousState=str(was))
    return REVERTED


def _check_revertable(
    table: str, entry_id: str, entry: LineageEntry, lineage: SegmentLineage, force: bool
) -> None:
    if entry.state is REVERTED:
        raise Conflict(f"lineage entry {entry_id} of table {table} is already REVERTED")
    if entry.state is IN_PROGRESS and not force:
        raise Conflict(f"lineage entry {entry_id} of table {table} is IN_PROGRESS; pass "
                       "forceRevert=true to revert an unfinished replacement")  # fmt: skip
    for other_id, other in lineage.entries.items():
        chained = set(entry.segments_to) & set(other.segments_from)
        if other_id != entry_id and other.is_live and chained:
            raise Conflict(f"cannot revert lineage entry {entry_id}: its segmentsTo "
                           f"{sorted(chained)} are replaced by lineage entry {other_id} "
                           f"({other.state}); revert that one first")  # fmt: skip


def lineage_json(store: ClusterStore, table: str) -> dict:
    """Pinot's ``GET /segments/{t}/lineage`` body (an empty lineage when there is none)."""
    lineage = read_lineage(store, table) or SegmentLineage(table)
    return lineage.to_json()
