"""A table's upsert or dedup metadata on one server: its partitions, the consuming segments'
gates, segment loads and removals, valid-doc snapshots, and what queries read.

Queries read a partition's segments and bitmaps together under the partition's lock
(``query_view``), so a key moving between docs or segments (an update, a commit) never shows
twice or not at all. ``consistencyMode`` NONE and SYNC read the live bitmaps that way (NONE is
as exact as SYNC here: Pinot's NONE may briefly show a key 0 or 2 times, and users file that as
a bug, apache/pinot#7958); SNAPSHOT serves a view refreshed every
``upsertViewRefreshIntervalMs`` (a query may ask for a fresher one with
``upsertViewFreshnessMs``, or the live bitmaps with ``skipUpsertView=true``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from pathlib import Path

from pyroaring import BitMap

from engine.spi.upsert_config import ConsistencyMode
from engine.upsert.context import UpsertContext
from engine.upsert.ingest import BatchOutcome, index_batch
from engine.upsert.partition import PartitionMetadata
from engine.upsert.snapshots import (
    delete_snapshots,
    read_snapshot,
    read_watermark,
    write_snapshot,
    write_watermark,
)
from engine.upsert.validity import TrackedSegment

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ServerDefaults:
    """Pinot's ``pinot.server.instance.upsert.default.enable.snapshot`` / ``.enable.preload``
    (and ``dedup.default.enable.preload``): what ``DEFAULT`` means on this server."""

    snapshot: bool = False
    preload: bool = False


class ConsumingGate:
    """What a consuming segment of an upsert/dedup table indexes through
    (``MutableSegment.gate``)."""

    def __init__(self, part: PartitionMetadata, tracked: TrackedSegment) -> None:
        self.part = part
        self.tracked = tracked
        self.track_nulls = part.context.tracked_columns

    def index(self, table, publish) -> BatchOutcome:
        return index_batch(self.part, self.tracked, table, publish)


@dataclasses.dataclass
class _View:
    taken: float  # time.monotonic()
    entries: dict[str, tuple[object, BitMap | None]]


class TableMetadata:
    def __init__(self, table_config, schema, *, table_dir: Path | None = None,
                 defaults: ServerDefaults = ServerDefaults()) -> None:  # fmt: skip
        context = UpsertContext.of(table_config, schema)
        if context is None:
            raise ValueError(f"{table_config.table_name_with_type} neither upserts nor dedups")
        self.context = context
        self.table_dir = table_dir
        mode = context.config or context.dedup
        self.snapshots = context.config is not None and context.config.snapshot.resolve(
            defaults.snapshot
        )
        self.preload = self.snapshots and mode.preload.resolve(defaults.preload)
        self.partitions: dict[int, PartitionMetadata] = {}
        self._partition_of: dict[str, int] = {}
        self._views: dict[int, _View] = {}
        self._lock = threading.Lock()

    @property
    def is_dedup(self) -> bool:
        return self.context.is_dedup

    def partition(self, number: int) -> PartitionMetadata:
        with self._lock:
            part = self.partitions.get(number)
            if part is None:
                part = self.partitions[number] = PartitionMetadata(self.context, number)
                if self.table_dir is not None:
                    found = read_watermark(self.table_dir, number, self.is_dedup)
                    if found is not None:
                        part.watermark = found
            return part

    # --- segments -------------------------------------------------------------------------------
    def start_consuming(self, name: str, mutable, *, partition: int, sequence: int,
                        creation_ms: int) -> ConsumingGate:  # fmt: skip
        """Before a consuming segment's first row: TTL cleanup and snapshot (metadataTTL:
        snapshot first, so purged keys' docs stay valid in it), then its gate."""
        part = self.partition(partition)
        with part.lock:
            if self.context.ttl > 0:
                self.take_snapshot(partition)
                part.purge_expired()
            else:
                part.purge_expired()
                self.take_snapshot(partition)
            tracked = part.track(name, mutable, mutable=True, sequence=sequence,
                                 creation_ms=creation_ms)  # fmt: skip
            part.publish(tracked)
            self._partition_of[name] = partition
            gate = ConsumingGate(part, tracked)
            mutable.gate = gate
            return gate

    def add_segment(self, name: str, segment, *, partition: int, sequence: int | None,
                    creation_ms: int, on_publish=None) -> None:  # fmt: skip
        """Load (or replace: a commit, a refresh) an immutable segment; ``on_publish`` swaps
        it in for queries while the partition is locked."""
        part = self.partition(partition)
        directory = getattr(segment, "path", None)
        preloaded = None
        if directory is not None:
            if not self.snapshots:
                delete_snapshots(Path(directory))
            elif self.preload and part.tracked(name) is None:  # its first load here
                preloaded = read_snapshot(Path(directory), len_docs=int(segment.total_docs))
        started = time.monotonic()
        tracked = part.add_segment(name, segment, sequence=sequence, creation_ms=creation_ms,
                                   preloaded=preloaded, on_publish=on_publish)  # fmt: skip
        tracked.snapshot_version = tracked.version if preloaded is not None else -1
        self._partition_of[name] = partition
        log.debug("upsert %s: %s loaded in %.0f ms (%d keys)", self.context.table, name,
                  (time.monotonic() - started) * 1000, part.num_keys)  # fmt: skip

    def remove_segment(self, name: str) -> None:
        partition = self._partition_of.pop(name, None)
        if partition is not None:
            self.partition(partition).remove_segment(name)

    def take_snapshot(self, partition: int) -> int:
        """Write the valid docs of the partition's changed immutable segments, then the
        watermark; returns the segments written."""
        if not self.snapshots and self.table_dir is None:
            return 0
        part = self.partition(partition)
        written = 0
        with part.lock:
            if self.snapshots:
                for tracked in part.segments.values():
                    directory = getattr(tracked.segment, "path", None)
                    if tracked.mutable or directory is None:
                        continue
                    if tracked.snapshot_version == tracked.version:
                        continue
                    write_snapshot(Path(directory), tracked.valid, tracked.queryable)
                    tracked.snapshot_version = tracked.version
                    written += 1
            if self.table_dir is not None and part.watermark != float("-inf"):
                write_watermark(self.table_dir, partition, part.watermark, self.is_dedup)
        return written

    # --- reads ----------------------------------------------------------------------------------
    def primary_key_counts(self) -> dict[int, int]:
        return {p: part.num_keys for p, part in sorted(self.partitions.items())}

    def partition_of(self, name: str) -> int | None:
        return self._partition_of.get(name)

    def tracked(self, name: str) -> TrackedSegment | None:
        partition = self._partition_of.get(name)
        return None if partition is None else self.partition(partition).tracked(name)

    def query_view(self, names: list[str], options: dict[str, str]):
        """``{name: (segment, valid docs)}`` for the tracked ``names``; a name absent is not
        tracked here (the caller serves it as usual). Dedup tables filter nothing."""
        by_partition: dict[int, list[str]] = {}
        for name in names:
            partition = self._partition_of.get(name)
            if partition is not None:
                by_partition.setdefault(partition, []).append(name)
        out: dict[str, tuple[object, BitMap | None]] = {}
        skip_delete = _true(options.get("skipUpsertDelete"))
        for partition, wanted in by_partition.items():
            view = self._partition_view(partition, options, skip_delete)
            missing = [n for n in wanted if n not in view]
            if missing:  # a segment newer than the shared view: read the live state
                view = self._capture(partition, skip_delete)
            out.update((n, view[n]) for n in wanted if n in view)
        return out

    def _partition_view(self, partition: int, options: dict, skip_delete: bool) -> dict:
        config = self.context.config
        if (config is None or config.consistency_mode is not ConsistencyMode.SNAPSHOT
                or skip_delete or _true(options.get("skipUpsertView"))):  # fmt: skip
            return self._capture(partition, skip_delete)
        max_age_ms = config.upsert_view_refresh_interval_ms
        if options.get("upsertViewFreshnessMs") not in (None, ""):
            max_age_ms = min(max_age_ms, float(options["upsertViewFreshnessMs"]))
        kept = self._views.get(partition)
        if kept is None or (time.monotonic() - kept.taken) * 1000 > max_age_ms:
            kept = self._views[partition] = _View(time.monotonic(), self._capture(partition, False))
        return kept.entries

    def _capture(self, partition: int, skip_delete: bool) -> dict:
        part = self.partition(partition)
        entries = {}
        with part.lock:
            for name, sid in part.by_name.items():
                tracked = part.segments[sid]
                segment = tracked.segment.snapshot() if tracked.mutable else tracked.segment
                if self.is_dedup:
                    entries[name] = (segment, None)
                    continue
                valid, queryable = tracked.frozen()
                entries[name] = (segment, valid if skip_delete or queryable is None else queryable)
        return entries


def _true(value) -> bool:
    return str(value).lower() == "true"
