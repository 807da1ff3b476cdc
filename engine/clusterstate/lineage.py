"""Segment lineage: which segments replace which, so that an m -> n swap is atomic for queries.

One ZNRecord per table type at ``PROPERTYSTORE/SEGMENT_LINEAGE/<table_TYPE>``, in Pinot's
layout: a list field per entry id ``[segmentsFrom, segmentsTo, state, timestamp]``, the two
segment lists comma-joined, the timestamp in epoch ms of the last state change; an optional
``custom.map`` map field. The controller writes it (``startReplaceSegments`` /
``endReplaceSegments`` / ``revertReplaceSegments`` and retention), always by a compare-and-set
on the znode version, because a task generator, several minions and the retention manager
may update entries of the same table at once. Brokers read it to route a lineage-consistent
set of segments (``lineage_consistent_segments``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable

from engine.clusterstate.errors import ClusterStateError
from engine.clusterstate.store import ClusterStore
from engine.clusterstate.znrecord import ZNRecord

CUSTOM_MAP_KEY = "custom.map"


class LineageEntryState(enum.StrEnum):
    IN_PROGRESS = "IN_PROGRESS"  # segmentsTo are being uploaded; queries use segmentsFrom
    COMPLETED = "COMPLETED"  # queries use segmentsTo; segmentsFrom await deletion
    REVERTED = "REVERTED"  # queries use segmentsFrom; segmentsTo await deletion


@dataclasses.dataclass(frozen=True)
class LineageEntry:
    segments_from: tuple[str, ...]
    segments_to: tuple[str, ...]
    state: LineageEntryState
    timestamp: int  # epoch ms of the last state change

    @property
    def is_live(self) -> bool:
        """IN_PROGRESS or COMPLETED: its segments are bound to it (REVERTED binds nothing)."""
        return self.state is not LineageEntryState.REVERTED

    def with_state(self, state: LineageEntryState, timestamp: int) -> LineageEntry:
        return dataclasses.replace(self, state=state, timestamp=timestamp)

    def to_json(self) -> dict:
        return {
            "segmentsFrom": list(self.segments_from),
            "segmentsTo": list(self.segments_to),
            "state": self.state.value,
            "timestamp": self.timestamp,
        }


@dataclasses.dataclass
class SegmentLineage:
    table_name_with_type: str
    entries: dict[str, LineageEntry] = dataclasses.field(default_factory=dict)
    custom_map: dict[str, str] | None = None

    def to_record(self) -> ZNRecord:
        record = ZNRecord(id=self.table_name_with_type)
        for entry_id, entry in self.entries.items():
            record.list_fields[entry_id] = [
                ",".join(entry.segments_from),
                ",".join(entry.segments_to),
                entry.state.value,
                str(entry.timestamp),
            ]
        if self.custom_map is not None:
            record.map_fields[CUSTOM_MAP_KEY] = dict(self.custom_map)
        return record

    @classmethod
    def from_record(cls, record: ZNRecord) -> SegmentLineage:
        entries = {}
        for entry_id, value in record.list_fields.items():
            where = f"segment lineage of {record.id}, entry {entry_id}"
            if len(value) != 4:
                raise ClusterStateError(
                    f"{where}: expected [segmentsFrom, segmentsTo, state, timestamp], "
                    f"got {len(value)} values"
                )
            try:
                state = LineageEntryState(value[2])
            except ValueError:
                raise ClusterStateError(
                    f"{where}: unknown state {value[2]!r} (IN_PROGRESS, COMPLETED or REVERTED)"
                ) from None
            try:
                timestamp = int(value[3])
            except ValueError:
                raise ClusterStateError(
                    f"{where}: timestamp {value[3]!r} is not epoch ms"
                ) from None
            entries[entry_id] = LineageEntry(_split(value[0]), _split(value[1]), state, timestamp)
        custom = record.map_fields.get(CUSTOM_MAP_KEY)
        return cls(record.id, entries, dict(custom) if custom is not None else None)

    def to_json(self) -> dict:
        """Pinot's ``GET /segments/{t}/lineage`` shape; entries oldest first."""
        ordered = sorted(self.entries.items(), key=lambda item: (item[1].timestamp, item[0]))
        out = {
            "tableNameWithType": self.table_name_with_type,
            "lineageEntries": {entry_id: entry.to_json() for entry_id, entry in ordered},
        }
        if self.custom_map is not None:
            out["customMap"] = dict(self.custom_map)
        return out


def _split(joined: str) -> tuple[str, ...]:
    return tuple(s for s in joined.split(",") if s)


# --- the routing rule ----------------------------------------------------------------------
def lineage_consistent_segments(
    segments: Iterable[str], lineage: SegmentLineage | None, served: Iterable[str] | None = None
) -> set[str]:
    """The subset of ``segments`` a query may use so that no row is counted twice.

    IN_PROGRESS and REVERTED entries hide their segmentsTo; COMPLETED entries hide their
    segmentsFrom (Pinot's SegmentLineageBasedSegmentPreSelector). With ``served`` (the
    segments that have a serving replica), a COMPLETED entry whose segmentsTo are not all
    served yet is routed as if still IN_PROGRESS, so a reader that sees the new state before
    the new segments are loaded keeps the old ones instead of missing rows. A segmentsTo that
    a later COMPLETED entry has replaced counts as served: its rows live on downstream."""
    kept = set(segments)
    if lineage is None or not lineage.entries:
        return kept
    pending = _pending_completions(lineage, set(served)) if served is not None else set()
    for entry_id, entry in lineage.entries.items():
        if entry.state is LineageEntryState.COMPLETED and entry_id not in pending:
            kept.difference_update(entry.segments_from)
        else:
            kept.difference_update(entry.segments_to)
    return kept


def _pending_completions(lineage: SegmentLineage, served: set[str]) -> set[str]:
    """Ids of COMPLETED entries to route as IN_PROGRESS (segmentsTo not all served yet).

    A fixpoint: a segment replaced by a COMPLETED entry vouches for an earlier entry only
    while that later entry is itself effective."""
    completed = {
        entry_id: entry
        for entry_id, entry in lineage.entries.items()
        if entry.state is LineageEntryState.COMPLETED
    }
    pending: set[str] = set()
    while True:
        replaced = {
            segment
            for entry_id, entry in completed.items()
            if entry_id not in pending
            for segment in entry.segments_from
        }
        grown = {
            entry_id
            for entry_id, entry in completed.items()
            if entry_id not in pending
            and any(s not in served and s not in replaced for s in entry.segments_to)
        }
        if not grown:
            return pending
        pending |= grown


def delete_blocked_segments(lineage: SegmentLineage | None) -> set[str]:
    """Segments that only the lineage lifecycle may delete (end, revert, retention): both
    sides of an IN_PROGRESS entry and the segmentsFrom of a COMPLETED one (Pinot #18518)."""
    blocked: set[str] = set()
    for entry in lineage.entries.values() if lineage else ():
        if entry.state is LineageEntryState.IN_PROGRESS:
            blocked.update(entry.segments_from)
            blocked.update(entry.segments_to)
        elif entry.state is LineageEntryState.COMPLETED:
            blocked.update(entry.segments_from)
    return blocked


# --- reading and writing -------------------------------------------------------------------
def read_lineage(store: ClusterStore, table_with_type: str) -> SegmentLineage | None:
    record, _ = store.get_record(store.paths.segment_lineage(table_with_type))
    return SegmentLineage.from_record(record) if record is not None else None


def update_lineage(
    store: ClusterStore,
    table_with_type: str,
    change: Callable[[SegmentLineage], SegmentLineage | None],
) -> SegmentLineage | None:
    """Apply ``change`` to the table's lineage (an empty one if there is none) atomically.

    ``change`` gets a fresh copy on every attempt (it may run several times when writers
    race) and returns the new lineage, or None to leave the znode as it is. Errors it raises
    propagate and nothing is written. Returns the lineage as written (or as it was)."""

    def on_record(record: ZNRecord | None) -> ZNRecord | None:
        current = (
            SegmentLineage.from_record(record)
            if record is not None
            else SegmentLineage(table_with_type)
        )
        new = change(current)
        return new.to_record() if new is not None else None

    record = store.update(store.paths.segment_lineage(table_with_type), on_record)
    return SegmentLineage.from_record(record) if record is not None else None


def delete_lineage(store: ClusterStore, table_with_type: str) -> bool:
    return store.delete(store.paths.segment_lineage(table_with_type))
