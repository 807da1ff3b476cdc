"""The primary-key metadata of one stream partition of an upsert table on one server (Pinot's
``ConcurrentMapPartitionUpsertMetadataManager``).

Every change (a consumed batch, a segment loaded, replaced or removed, a TTL purge) happens
under ``lock``, and so does every query's capture of the partition's bitmaps
(``engine.upsert.table``): a query sees the partition as it was between two changes, so a key
never counts twice or not at all, whatever the consistency mode.

A segment's docs enter the map as Pinot's ``addSegment`` does (the result does not depend on
load order): per key the doc with the largest comparison value (a tie inside a segment: the
later doc) competes with the stored one; it wins when larger, and on a tie when its segment
wins the tie (``TrackedSegment.wins_tie_against``), or when it replaces the stored doc's
segment (a commit, a refresh).
"""

from __future__ import annotations

import logging
import threading

import numpy as np
from pyroaring import BitMap

from engine.upsert.comparison import delete_flags, stored_order_key
from engine.upsert.context import UpsertContext
from engine.upsert.entries import Entries, doc_of, pack, segment_of
from engine.upsert.key_index import key_index_for
from engine.upsert.keys import Keys
from engine.upsert.rows import SegmentRows
from engine.upsert.validity import TrackedSegment, doc_bitmap

log = logging.getLogger(__name__)


class PartitionMetadata:
    def __init__(self, context: UpsertContext, partition: int) -> None:
        self.context = context
        self.partition = partition
        self.lock = threading.RLock()
        hashed = context.keys.hash_function.value != "NONE"
        sorted_keys = context.keys.integer or hashed
        self.entries = Entries(context.comparison.dtype if context.comparison else np.float64,
                               hashed, np.int64 if sorted_keys else object)  # fmt: skip
        low_of = (lambda slots: self.entries.low[slots]) if hashed else None
        self.index = key_index_for(sorted_keys, low_of)
        self.segments: dict[int, TrackedSegment] = {}
        self.by_name: dict[str, int] = {}
        self._next_sid = 0
        self.watermark = float("-inf")  # the largest comparison value seen (TTL tables)
        self.counters = {"outOfOrder": 0, "inconsistentRows": 0, "metadataTtlKeysRemoved": 0,
                         "deletedKeysTtlKeysRemoved": 0, "errorRows": 0, "dedupDropped": 0}  # fmt: skip

    # --- reads ----------------------------------------------------------------------------------
    @property
    def num_keys(self) -> int:
        return len(self.index)

    def tracked(self, name: str) -> TrackedSegment | None:
        sid = self.by_name.get(name)
        return None if sid is None else self.segments.get(sid)

    @property
    def memory_bytes(self) -> int:
        return self.index.nbytes + self.entries.nbytes

    # --- segments -------------------------------------------------------------------------------
    def track(self, name: str, segment, *, mutable: bool, sequence: int | None,
              creation_ms: int) -> TrackedSegment:  # fmt: skip
        """A new entry for ``segment`` (not yet visible under ``name``)."""
        tracked = TrackedSegment(self._next_sid, name, segment, mutable, sequence, creation_ms,
                                 has_deletes=self.context.delete_column is not None)  # fmt: skip
        self._next_sid += 1
        self.segments[tracked.sid] = tracked
        return tracked

    def publish(self, tracked: TrackedSegment) -> None:
        """Make ``tracked`` the segment served under its name (the one it replaces, if any,
        leaves; keys it still held leave the map)."""
        old = self.tracked(tracked.name)
        self.by_name[tracked.name] = tracked.sid
        if old is not None and old is not tracked:
            self._forget_segment(old, inconsistent=True)

    def add_segment(self, name: str, segment, *, sequence: int | None, creation_ms: int,
                    preloaded: BitMap | None = None, on_publish=None) -> TrackedSegment:  # fmt: skip
        """Load (or replace, when ``name`` is tracked) an immutable segment's docs into the
        map; ``on_publish`` runs once its validity is complete, still under the lock, so the
        caller can swap the served segment with no moment a key counts twice or never.
        ``preloaded``: the segment's valid-doc snapshot, whose docs enter uncompared."""
        with self.lock:
            replacing = self.tracked(name)
            tracked = self.track(name, segment, mutable=False, sequence=sequence,
                                 creation_ms=creation_ms)  # fmt: skip
            self._replay(tracked, SegmentRows(segment), replacing, preloaded)
            self.publish(tracked)
            if on_publish is not None:
                on_publish()
            return tracked

    def remove_segment(self, name: str) -> None:
        """The segment leaves (dropped, moved away): its keys leave the map; older versions
        in other segments come back only at restart (as in Pinot)."""
        with self.lock:
            tracked = self.tracked(name)
            if tracked is not None:
                del self.by_name[name]
                self._forget_segment(tracked, inconsistent=False)

    def _forget_segment(self, tracked: TrackedSegment, *, inconsistent: bool) -> None:
        live = self.entries.live_slots()
        held = live[segment_of(self.entries.location[live]) == tracked.sid]
        if len(held):
            if inconsistent:
                self.counters["inconsistentRows"] += len(held)
            self._drop_slots(held)
        self.segments.pop(tracked.sid, None)

    def _drop_slots(self, slots: np.ndarray) -> None:
        keys = self._keys_of(slots)
        self.index.remove(keys, slots)
        self.entries.release(slots)

    def _keys_of(self, slots: np.ndarray) -> Keys:
        low = None if self.entries.low is None else self.entries.low[slots]
        return Keys(self.entries.key[slots], low)

    # --- replay ---------------------------------------------------------------------------------
    def _replay(self, tracked: TrackedSegment, rows: SegmentRows, replacing, preloaded) -> None:
        ctx = self.context
        columns = list(dict.fromkeys(ctx.keys.columns + ctx.comparison.columns
                                     + ([ctx.delete_column] if ctx.delete_column else [])))  # fmt: skip
        table = rows.table(columns)
        cmp, bad = ctx.comparison.read(table)
        usable = np.flatnonzero(~(bad | ctx.keys.missing(table)))
        docs = usable.astype(np.int64)
        keys = ctx.keys.read(table).take(usable)
        cmp = cmp[usable]
        deleted = delete_flags(table, ctx.delete_column, ctx.delete_type)[usable]
        if ctx.ttl > 0 or ctx.deleted_ttl > 0:
            tracked.max_comparison = float(cmp.max()) if len(cmp) else float("-inf")
            self.watermark = max(self.watermark, tracked.max_comparison)
            if ctx.ttl > 0 and tracked.max_comparison < self.watermark - ctx.ttl:
                # all its keys expired: not scanned; the snapshot says what is valid, else all
                valid = preloaded if preloaded is not None else doc_bitmap(docs)
                picked = _in_bitmap(docs, valid)
                tracked.set_docs(docs[picked], deleted[picked])
                return
        if preloaded is not None and replacing is None:
            picked = _in_bitmap(docs, preloaded)
            self._insert_uncompared(tracked, keys.take(picked), cmp[picked], docs[picked],
                                    deleted[picked])  # fmt: skip
            keys, cmp, docs, deleted = (
                keys.take(~picked),
                cmp[~picked],
                docs[~picked],
                deleted[~picked],
            )
        win = _winners(keys, cmp, docs)
        self._compete(tracked, keys.take(win), cmp[win], docs[win], deleted[win], replacing)

    def _insert_uncompared(self, tracked, keys: Keys, cmp, docs, deleted) -> None:
        slots = self.index.lookup(keys)
        fresh = slots < 0
        if not fresh.all():  # a snapshot that overlaps the map: compare those docs instead
            rest = ~fresh
            self._compete(tracked, keys.take(rest), cmp[rest], docs[rest], deleted[rest], None)
        self._insert(tracked, keys.take(fresh), cmp[fresh], docs[fresh], deleted[fresh])

    def _compete(self, tracked, keys: Keys, cmp, docs, deleted, replacing) -> None:
        """Each key's doc (one per key) against the stored one (stored-vs-stored order)."""
        slots = self.index.lookup(keys)
        present = slots >= 0
        at = slots[present]
        stored = self.entries.cmp[at]
        new = cmp[present]
        stored_sid = segment_of(self.entries.location[at])
        if new.dtype == object:
            greater = np.array([stored_order_key(a) > stored_order_key(b)
                                for a, b in zip(new, stored, strict=True)], dtype=bool)  # fmt: skip
            equal = np.array([stored_order_key(a) == stored_order_key(b)
                              for a, b in zip(new, stored, strict=True)], dtype=bool)  # fmt: skip
        else:
            greater, equal = new > stored, new == stored
        tie_wins = np.array([
            self.context.is_dedup  # dedup: the later-loaded segment keeps the key
            or (replacing is not None and sid == replacing.sid)
            or tracked.wins_tie_against(self.segments[int(sid)])
            for sid in stored_sid
        ], dtype=bool)  # fmt: skip
        take = greater | (equal & tie_wins)
        rows = np.flatnonzero(present)[take]
        self._update(tracked, at[take], cmp[rows], docs[rows], deleted[rows])
        fresh = ~present
        self._insert(tracked, keys.take(fresh), cmp[fresh], docs[fresh], deleted[fresh])

    # --- writes shared by every path ------------------------------------------------------------
    def _update(self, tracked, slots, cmp, docs, deleted) -> None:
        """Stored keys at ``slots`` move to ``docs`` of ``tracked``."""
        if not len(slots):
            return
        old = self.entries.location[slots]
        old_sid = segment_of(old)
        # while consuming, the keys moved almost always come from one segment (the consuming one)
        single = bool((old_sid == old_sid[0]).all())
        for sid in old_sid[:1] if single else np.unique(old_sid):
            owner = self.segments.get(int(sid))
            if owner is not None:
                owner.clear_docs(doc_of(old if single else old[old_sid == sid]))
        self.entries.location[slots] = pack(tracked.sid, docs)
        self.entries.cmp[slots] = cmp
        self.entries.deleted[slots] = deleted
        tracked.set_docs(docs, deleted)

    def _insert(self, tracked, keys: Keys, cmp, docs, deleted) -> None:
        if not len(keys):
            return
        slots = self.entries.allocate(len(keys))
        self.entries.key[slots] = keys.main
        self.entries.location[slots] = pack(tracked.sid, docs)
        self.entries.cmp[slots] = cmp
        self.entries.deleted[slots] = deleted
        if self.entries.low is not None:
            self.entries.low[slots] = keys.low
        self.index.insert(keys, slots)
        tracked.set_docs(docs, deleted)

    # --- TTL ------------------------------------------------------------------------------------
    def purge_expired(self) -> None:
        """At a consuming segment's start (Pinot's ``removeExpiredPrimaryKeys``): keys whose
        value is older than the watermark minus ``metadataTTL`` leave the map, their docs
        staying valid; deleted keys older than it minus ``deletedKeysTTL`` leave it too, and
        their tombstones turn invalid."""
        ctx = self.context
        if ctx.ttl <= 0 and ctx.deleted_ttl <= 0:
            return
        with self.lock:
            live = self.entries.live_slots()
            cmp = self.entries.cmp[live].astype(np.float64)
            gone = np.zeros(len(live), dtype=bool)
            if ctx.ttl > 0:
                gone |= cmp < self.watermark - ctx.ttl
                self.counters["metadataTtlKeysRemoved"] += int(gone.sum())
            if ctx.deleted_ttl > 0:
                dead = self.entries.deleted[live] & (cmp < self.watermark - ctx.deleted_ttl) & ~gone
                self.counters["deletedKeysTtlKeysRemoved"] += int(dead.sum())
                location = self.entries.location[live[dead]]
                for sid in np.unique(segment_of(location)):
                    owner = self.segments.get(int(sid))
                    if owner is not None:
                        owner.clear_docs(doc_of(location[segment_of(location) == sid]))
                gone |= dead
            if gone.any():
                self._drop_slots(live[gone])


def _in_bitmap(docs: np.ndarray, bitmap: BitMap) -> np.ndarray:
    """Which of ``docs`` (ids of one segment) are in ``bitmap``: a mask over the doc ids,
    one pass, where ``np.isin`` would sort both."""
    if not len(docs) or not len(bitmap):
        return np.zeros(len(docs), dtype=bool)
    members = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    mask = np.zeros(max(int(docs.max()), int(members[-1])) + 1, dtype=bool)
    mask[members] = True
    return mask[docs]


def _winners(keys: Keys, cmp: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Per key the position of its doc with the largest value (a tie: the later doc)."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    ranks = dense_rank([stored_order_key(v) for v in cmp]) if cmp.dtype == object else cmp
    if keys.main.dtype == object:
        group, _ = keys.group()
        by_key = [group]
    else:  # integer or hashed keys sort as they are: no grouping pass, winners in key order
        by_key = [keys.main] if keys.low is None else [keys.low, keys.main]
    order = np.lexsort((docs, ranks, *by_key))
    last = np.zeros(len(order), dtype=bool)
    last[-1] = True
    for column in by_key:
        ordered = column[order]
        last[:-1] |= ordered[1:] != ordered[:-1]
    return order[last]


def dense_rank(values: list) -> np.ndarray:
    """Dense ranks of mutually comparable Python values (tuples included)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = np.empty(len(values), dtype=np.int64)
    rank, previous = -1, None
    for position in order:
        if rank < 0 or values[position] != previous:
            rank, previous = rank + 1, values[position]
        ranks[position] = rank
    return ranks
