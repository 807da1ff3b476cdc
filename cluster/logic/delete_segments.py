"""Delete segments: out of the ideal state first (servers drop what leaves it), then the
segment metadata, then the deep-store file."""

from __future__ import annotations

import logging

from cluster.logic import audit
from cluster.logic.deep_store import get_deep_store
from cluster.logic.table_views import existing_types
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import (
    ClusterStore,
    ResourceAssignment,
    split_table_name,
    table_name_with_type,
)
from engine.clusterstate.lineage import delete_blocked_segments, delete_lineage, read_lineage
from engine.common.names import is_valid_segment_name
from engine.spi.periods import period_ms

log = logging.getLogger(__name__)


def keep_deleted(retention: str | None) -> bool:
    """Pinot's ``retention`` parameter: ``0d`` deletes at once, anything else (or nothing)
    keeps the files in Deleted_Segments for DELETED_SEGMENTS_RETENTION."""
    if retention in (None, ""):
        return True
    try:
        return period_ms(retention) > 0
    except ValueError as exc:
        raise BadRequest(f"retention: {exc}") from exc


def delete_segments(
    store: ClusterStore,
    table_with_type: str,
    segments: list[str] | None,
    *,
    keep: bool = True,
    lineage_managed: bool = False,
) -> list[str]:
    """Delete ``segments`` of a table type (all of them if None); returns the deleted names.
    NotFound if a named segment does not exist. Conflict if a named segment takes part in a
    live segment lineage entry, unless the lineage lifecycle itself deletes it
    (``lineage_managed``): deleting it would bring its rows back, or hide new ones, when the
    entry ends (Pinot #18518). Deleting all segments also drops the table's lineage."""
    known = set(store.segment_names(table_with_type))
    ideal = store.ideal_state(table_with_type)
    if ideal is not None:
        known |= set(ideal.segments)
    if segments is None:
        targets = sorted(known)
    else:
        missing = [s for s in segments if s not in known]
        if missing:
            raise NotFound(f"Segment {', '.join(missing)} of table {table_with_type} not found")
        targets = list(segments)
        blocked = [] if lineage_managed else sorted(
            delete_blocked_segments(read_lineage(store, table_with_type)) & set(targets)
        )  # fmt: skip
        if blocked:
            raise Conflict(f"Cannot delete segments {blocked} of table {table_with_type}: they "
                           "take part in a live segment lineage entry; end or revert it "
                           "(endReplaceSegments / revertReplaceSegments)")  # fmt: skip
    if segments is None:
        delete_lineage(store, table_with_type)
    if not targets:
        return []
    drop = set(targets)

    def change(current: ResourceAssignment) -> ResourceAssignment | None:
        if not drop & set(current.segments):
            return None
        for segment in drop:
            current.segments.pop(segment, None)
        return current

    store.update_ideal_state(table_with_type, change, create=False)
    raw, _ = split_table_name(table_with_type)
    deep_store = get_deep_store()
    for segment in targets:
        if not is_valid_segment_name(segment):
            # written to ZooKeeper by hand (uploads refuse it): it has no deep-store file and
            # no metadata znode of its own; leaving the ideal state was all there was to do
            log.warning("segment %r of %s has an invalid name: only unassigned", segment,
                        table_with_type)  # fmt: skip
            continue
        store.delete_segment_metadata(table_with_type, segment)
        deep_store.remove(raw, segment, keep=keep)
    audit.record("segment.delete", "segment", table_with_type, segments=targets, kept=keep)
    return targets


def delete_all_segments(
    store: ClusterStore, table: str, table_type: str | None, *, keep: bool = True
) -> list[str]:
    """Delete every segment of the table's types (``DELETE /segments/{t}``); returns the
    resources emptied."""
    raw = split_table_name(table)[0]
    done = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)
        delete_segments(store, resource, None, keep=keep)
        done.append(resource)
    return done
