"""A byte-bounded LRU of decoded column data (forward indexes, raw values, string
dictionaries as numpy) and of what a filter predicate resolved to on a segment (dictionary
ids, index doc sets), one per ``engine.query.QueryEngine``.

Segments keep forward indexes chunk-compressed on disk; decoding a 5M-row column costs far
more than scanning it, so hot columns stay decoded here, like Pinot's HEAP load mode, but
within a byte budget (``QuerySettings.decoded_cache_bytes``, default 4 GiB). Entries of a
segment are dropped when the segment object is garbage-collected (unloaded) or ``forget`` is
called, so a refreshed segment is never served stale.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict

import numpy as np
from pyroaring import BitMap

from engine.query.docset import DocSet


def _nbytes(value) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes) if value.dtype != object else int(value.size) * 64
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value if v is not None)
    if isinstance(value, BitMap):
        return sys.getsizeof(value)  # roaring reports its containers' bytes
    if isinstance(value, DocSet):
        return 64 + sum(
            _nbytes(v) for v in (value.bitmap, value.mask, value.doc_ids) if v is not None
        )
    return 64


class MemoKey:
    """A cache key whose hash is computed once. A plan keeps its memo keys
    (``QueryPlan.segment_memo_key``): a tuple of expressions would be hashed again, node by
    node, on every lookup. Raises TypeError for an unhashable part (a list literal)."""

    __slots__ = ("_hash", "parts")

    def __init__(self, *parts) -> None:
        self.parts = parts
        self._hash = hash(parts)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (
            isinstance(other, MemoKey) and self._hash == other._hash and self.parts == other.parts
        )

    def __repr__(self) -> str:
        return f"MemoKey{self.parts!r}"


class DecodedCache:
    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self.used = 0
        self._entries: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        # Re-entrant: a segment's finalizer (drop_segment) can run inside put or drop, on
        # the thread holding the lock, when an allocation there starts a garbage collection
        # that frees a segment; a plain Lock would deadlock that thread.
        self._lock = threading.RLock()
        self._tracked: set[int] = set()

    def get(self, segment, key):
        full_key = (id(segment), key)
        with self._lock:
            entry = self._entries.get(full_key)
            if entry is None:
                return None
            self._entries.move_to_end(full_key)
            return entry[0]

    def put(self, segment, key, value) -> None:
        size = _nbytes(value)
        if size > self.budget:
            return
        with self._lock:
            seg_id = id(segment)
            if seg_id not in self._tracked:
                try:
                    weakref.finalize(segment, self.drop_segment, seg_id)
                except TypeError:
                    return  # not weak-referenceable: do not cache (its id could be reused)
                self._tracked.add(seg_id)
            old = self._entries.pop((seg_id, key), None)
            if old is not None:
                self.used -= old[1]
            self._entries[(seg_id, key)] = (value, size)
            self.used += size
            while self.used > self.budget and self._entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.used -= dropped

    def forget(self, segment) -> None:
        """Drop ``segment``'s decoded data now (call when unloading or replacing a segment;
        otherwise it goes when the segment object is garbage-collected)."""
        self.drop_segment(id(segment))

    def drop_segment(self, seg_id: int) -> None:
        with self._lock:
            self._tracked.discard(seg_id)
            # a snapshot: a nested drop of another segment may change the entries meanwhile
            for key in [k for k in list(self._entries) if k[0] == seg_id]:
                entry = self._entries.pop(key, None)
                if entry is not None:
                    self.used -= entry[1]
