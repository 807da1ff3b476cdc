"""RealtimeSegmentValidationManager's repairs (Pinot's ``ensureAllPartitionsConsuming``):
every partition of the topic has exactly one CONSUMING segment, whatever crashed or was
deleted on the way.

Per partition, looking at its latest LLC segment:

- none (a partition added to the topic): create sequence 0 from the partition's smallest
  offset, so nothing produced before it was noticed is lost;
- DONE with no CONSUMING successor (the consuming segment was deleted, the table was paused,
  or the controller died after commit step 1): create the successor from the end offset, on
  the DONE one's servers while they are all consuming servers (``servers``), else on the
  partition's consuming servers (a relocated segment sits on ``realtimeCompleted`` servers,
  which must not consume); the DONE one goes ONLINE;
- IN_PROGRESS but missing from the ideal state (died between steps 2 and 3): add it as
  CONSUMING, and the previous segment ONLINE;
- some replicas OFFLINE, others CONSUMING: set the OFFLINE ones back to CONSUMING;
- all replicas OFFLINE: a new segment (sequence + 1) from the same start offset, or the
  earliest one still in the stream (``llcStreamDataLoss``).

Half-done commits are repaired only after ``max.segment.completion.time.millis`` (5 min) since
the segment's metadata last changed, so a commit in flight is never raced. A DONE segment
already ONLINE on all its replicas finished its commit, so its successor is created at once
(resuming a paused table must not wait 5 minutes).
"""

from __future__ import annotations

import logging

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.consuming_segments import (
    CONSUMING,
    OFFLINE,
    ONLINE,
    consuming_instances,
)
from cluster.logic.realtime.pause import is_paused
from cluster.logic.realtime.stream_status import clear_stream_error, record_stream_error
from engine.clusterstate import ClusterStore, ResourceAssignment
from engine.clusterstate.segment_status import is_committed, is_consuming
from engine.common import clock
from engine.realtime.llc_name import LLCSegmentName
from engine.stream.config import OffsetCriteria, table_stream_configs
from engine.stream.errors import StreamError

log = logging.getLogger(__name__)
MAX_SEGMENT_COMPLETION_MS = 300_000
SMALLEST = OffsetCriteria.parse("smallest")


def ensure_partitions_consuming(
    store: ClusterStore,
    config,
    servers: list[str],
    replicas: int,
    metadata_provider,
    *,
    now_ms: int | None = None,
    max_completion_ms: int = MAX_SEGMENT_COMPLETION_MS,
    offset_criteria: OffsetCriteria | None = None,
) -> list[str]:
    """Repair ``config``'s table as described above; returns one line per repair made.
    ``now_ms`` is the creation time given to new segments (default: now). A paused table is
    left alone. ``offset_criteria`` (resumeConsumption's consumeFrom smallest/largest) makes
    the successors of committed segments start there instead of at their end offsets. A
    topic that cannot be read raises StreamError and is recorded as the table's
    ``streamIngestionError`` (``stream_status``) until a later run reads it."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    table = config.table_name_with_type
    stream = table_stream_configs(config)[0]
    ideal = store.ideal_state(table) or ResourceAssignment(table)
    if is_paused(ideal):
        return []
    latest: dict[int, LLCSegmentName] = {}
    for segment in store.segment_names(table):
        name = LLCSegmentName.parse(segment)
        if name is not None and (name.partition not in latest or name > latest[name.partition]):
            latest[name.partition] = name
    actions: list[str] = []
    changes: dict[str, dict[str, str]] = {}  # ideal-state entries to write

    def settled(segment: str) -> bool:
        # against the wall clock: the znode's mtime is ZooKeeper's wall-clock time
        stat = store.stat(store.paths.segment(table, segment))
        return stat is None or clock.now_ms() - stat.mtime > max_completion_ms

    def create(name: LLCSegmentName, start: int, instances: list[str]) -> None:
        rows, extra = llc.row_threshold(stream.flush, _consuming_per_server(ideal, changes))
        store.put_segment_metadata(
            llc.new_consuming_segment(table, name, start, replicas, rows, now_ms=now, extra=extra)
        )
        changes[str(name)] = dict.fromkeys(instances, CONSUMING)

    for partition in _partition_ids(store, table, stream, metadata_provider):
        name = latest.get(partition)
        if name is None:
            first = LLCSegmentName.create(config.table_name, partition, 0, now)
            create(first, metadata_provider.offset_for(partition, SMALLEST),
                   consuming_instances(partition, servers, replicas))  # fmt: skip
            actions.append(f"partition {partition} is new: created {first}")
            continue
        segment = str(name)
        meta = store.segment_metadata(table, segment)
        states = dict(ideal.segments.get(segment) or {})
        instances = sorted(states) or consuming_instances(partition, servers, replicas)
        if is_committed(meta):
            # ONLINE everywhere: commit step 3 is done (a paused table's commit, or the
            # successor was deleted), so no commit is in flight to race
            finished = bool(states) and all(v == ONLINE for v in states.values())
            if not finished and not settled(segment):
                continue
            following = name.next(now)
            start = int(meta.extra.get(llc.END_OFFSET, 0))
            if offset_criteria is not None:
                start = metadata_provider.offset_for(partition, offset_criteria)
            on_consuming = bool(states) and set(states) <= set(servers)
            placed = (
                instances if on_consuming else consuming_instances(partition, servers, replicas)
            )
            create(following, start, placed)
            if states:
                changes[segment] = {s: ONLINE if v == CONSUMING else v for s, v in states.items()}
            actions.append(f"{segment} is DONE without a successor: created {following}")
        elif not states:
            if not settled(segment):
                continue
            changes[segment] = dict.fromkeys(instances, CONSUMING)
            previous = _previous_done(store, table, name, ideal)
            if previous is not None:
                changes[previous] = dict.fromkeys(ideal.segments[previous], ONLINE)
            actions.append(f"{segment} was missing from the ideal state: added as CONSUMING")
        elif all(v == OFFLINE for v in states.values()):
            start = int(meta.extra.get(llc.START_OFFSET, 0))
            earliest = metadata_provider.offset_for(partition, SMALLEST)
            following = name.next(now)
            if start < earliest:
                log.warning("llcStreamDataLoss: %s offsets [%d, %d) are gone from the stream",
                            table, start, earliest)  # fmt: skip
                actions.append(f"llcStreamDataLoss: offsets [{start}, {earliest}) of partition "
                               f"{partition} are no longer in the stream")  # fmt: skip
                start = earliest
            create(following, start, instances)
            actions.append(f"every replica of {segment} is OFFLINE: created {following}")
        elif any(v == OFFLINE for v in states.values()):
            changes[segment] = {s: CONSUMING if v == OFFLINE else v for s, v in states.items()}
            actions.append(f"OFFLINE replicas of {segment} set back to CONSUMING")

    if changes:

        def apply(current: ResourceAssignment) -> ResourceAssignment:
            current.segments.update(changes)
            return current

        store.update_ideal_state(table, apply)
        for line in actions:
            log.info("%s: %s", table, line)
    return actions


def _partition_ids(store: ClusterStore, table: str, stream, metadata_provider) -> list[int]:
    """The topic's partitions; a stream that cannot be read is recorded as the table's stream
    error (and raised), one that can clears it."""
    try:
        partitions = metadata_provider.partition_ids()
    except StreamError as exc:
        record_stream_error(store, table, stream, exc)
        raise
    clear_stream_error(store, table)
    return partitions


def _consuming_per_server(ideal: ResourceAssignment, changes: dict) -> int:
    counts: dict[str, int] = {}
    for segments in (ideal.segments, changes):
        for replicas in segments.values():
            for server, state in replicas.items():
                if state == CONSUMING:
                    counts[server] = counts.get(server, 0) + 1
    return max(counts.values(), default=1)


def _previous_done(store, table: str, name: LLCSegmentName, ideal) -> str | None:
    """The partition's previous segment when it is DONE but still CONSUMING in the ideal
    state (the controller died between commit steps 2 and 3)."""
    if name.sequence == 0:
        return None
    for segment, replicas in ideal.segments.items():
        other = LLCSegmentName.parse(segment)
        if (
            other is not None
            and other.partition == name.partition
            and other.sequence == name.sequence - 1
            and is_consuming(replicas)
        ):
            meta = store.segment_metadata(table, segment)
            if meta is not None and is_committed(meta):
                return segment
    return None
