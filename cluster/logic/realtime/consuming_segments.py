"""Creating CONSUMING segments and committing them, in ZooKeeper.

- ``create_consuming_segments``: on table creation, one CONSUMING segment (sequence 0) per
  partition of the topic, starting where ``auto.offset.reset`` points, on
  ``replicasPerPartition`` servers of the table's ``<tenant>_REALTIME`` tag.
- ``commit_segment``: the controller's three ZK steps when a segment commits: the segment
  DONE at its end offset, the next one IN_PROGRESS from that offset, then the ideal state
  (committed ONLINE, next CONSUMING on the same servers). A crash between steps is repaired
  by ``ensure_partitions_consuming``.
"""

from __future__ import annotations

from collections import Counter

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.pause import is_paused
from cluster.logic.realtime.stream_status import record_stream_error
from engine.clusterstate import ClusterStore, ResourceAssignment
from engine.common import clock
from engine.realtime.llc_name import LLCSegmentName
from engine.stream.config import table_stream_configs
from engine.stream.errors import StreamError

CONSUMING = "CONSUMING"
ONLINE = "ONLINE"
OFFLINE = "OFFLINE"


def consuming_instances(partition: int, servers: list[str], replicas: int) -> list[str]:
    """The servers of a partition's CONSUMING segment: ``replicas`` consecutive servers (of
    the sorted list) starting at ``partition * replicas``, so partitions and replicas spread
    evenly, as Pinot's default real-time assignment does."""
    if replicas > len(servers):
        raise ValueError(f"{replicas} replicas need as many servers; the tenant has {len(servers)}")
    ordered = sorted(servers)
    start = (partition * replicas) % len(ordered)
    return [ordered[(start + r) % len(ordered)] for r in range(replicas)]


def max_partitions_per_instance(assignment: dict[int, list[str]]) -> int:
    counts = Counter(server for servers in assignment.values() for server in servers)
    return max(counts.values(), default=1)


def create_consuming_segments(
    store: ClusterStore,
    config,
    servers: list[str],
    replicas: int,
    metadata_provider,
    *,
    now_ms: int | None = None,
) -> list[str]:
    """Create sequence 0 of every partition; returns the new segment names. ``config`` is
    the REALTIME ``TableConfig``; ``metadata_provider`` answers ``partition_ids()`` and
    ``offset_for(partition)`` (``engine.stream.kafka.KafkaMetadataProvider``). Stream errors
    (``StreamError``: no such topic, brokers down) propagate before anything is written."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    stream = table_stream_configs(config)[0]
    table = config.table_name_with_type
    try:
        partitions = metadata_provider.partition_ids()
    except StreamError as exc:  # shown by consumingSegmentsInfo until validation reads it
        record_stream_error(store, table, stream, exc, now_ms=now)
        raise
    starts = {p: metadata_provider.offset_for(p) for p in partitions}
    assignment = {p: consuming_instances(p, servers, replicas) for p in partitions}
    rows, extra = llc.row_threshold(stream.flush, max_partitions_per_instance(assignment))
    names = {}
    for partition in partitions:
        name = LLCSegmentName.create(config.table_name, partition, 0, now)
        store.put_segment_metadata(
            llc.new_consuming_segment(
                table, name, starts[partition], replicas, rows, now_ms=now, extra=extra
            )
        )
        names[str(name)] = assignment[partition]

    def add(ideal: ResourceAssignment) -> ResourceAssignment:
        for name, instances in names.items():
            ideal.segments[name] = dict.fromkeys(instances, CONSUMING)
        return ideal

    store.update_ideal_state(table, add)
    return sorted(names)


def commit_segment(
    store: ClusterStore,
    config,
    committing: str,
    end_offset: int,
    built,
    *,
    download_url: str,
    size_in_bytes: int,
    now_ms: int | None = None,
    extra: dict[str, str] | None = None,
) -> str | None:
    """Commit ``committing`` at ``end_offset`` (exclusive) with the built segment's metadata
    (``engine.segment.SegmentMetadata``) and ``extra`` ZK fields; returns the name of the next
    CONSUMING segment (None for a paused table, whose segments get no successor)."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    table = config.table_name_with_type
    name = LLCSegmentName.parse(committing)
    if name is None:
        raise ValueError(f"{committing} is not an LLC segment name")
    current = store.segment_metadata(table, committing)
    if current is None:
        raise ValueError(f"segment {committing} of {table} has no ZK metadata")
    # step 1: the committed segment is DONE
    store.put_segment_metadata(
        llc.committed_segment(
            current, end_offset, built, download_url=download_url,
            size_in_bytes=size_in_bytes, now_ms=now, extra=extra,
        )
    )  # fmt: skip
    ideal = store.ideal_state(table)
    instances = sorted((ideal.segments.get(committing) if ideal else None) or {})
    if is_paused(ideal):  # a paused table's segments commit without successors
        _advance_ideal_state(store, table, committing, None, instances)
        return None
    # step 2: its successor starts where it ended
    following = name.next(now)
    stream = table_stream_configs(config)[0]
    partitions = _partitions_per_instance(ideal)
    rows, extra = llc.row_threshold(
        stream.flush, partitions, store.segment_metadata(table, committing), size_in_bytes
    )
    replicas = int(current.extra.get(llc.NUM_REPLICAS) or len(instances) or 1)
    store.put_segment_metadata(
        llc.new_consuming_segment(
            table, following, end_offset, replicas, rows, now_ms=now, extra=extra
        )
    )
    # step 3: ideal state: committed ONLINE, successor CONSUMING on the same servers
    _advance_ideal_state(store, table, committing, str(following), instances)
    return str(following)


def _partitions_per_instance(ideal: ResourceAssignment | None) -> int:
    if ideal is None:
        return 1
    counts = Counter(
        server
        for replicas in ideal.segments.values()
        for server, state in replicas.items()
        if state == CONSUMING
    )
    return max(counts.values(), default=1)


def _advance_ideal_state(store, table: str, committed: str, following: str | None,
                         instances: list[str]) -> None:  # fmt: skip
    def change(ideal: ResourceAssignment) -> ResourceAssignment:
        current = ideal.segments.get(committed) or dict.fromkeys(instances, CONSUMING)
        ideal.segments[committed] = {
            server: ONLINE if state in (CONSUMING, ONLINE) else state
            for server, state in current.items()
        }
        if following is not None:
            ideal.segments[following] = dict.fromkeys(instances, CONSUMING)
        return ideal

    store.update_ideal_state(table, change)
