"""A byte-bounded LRU (cachetools' ``LRUCache`` weighted by each value's bytes) of decoded
column data (forward indexes, raw values, string dictionaries as numpy) and of what a filter
predicate resolved to on a segment (dictionary ids, index doc sets), one per
``engine.query.QueryEngine``.

Segments keep forward indexes chunk-compressed on disk; decoding a 5M-row column costs far
more than scanning it, so hot columns stay decoded here, like Pinot's HEAP load mode, but
within a byte budget (``QuerySettings.decoded_cache_bytes``, default 4 GiB). Entries of a
segment are dropped when the segment object is garbage-collected (unloaded) or ``forget`` is
called, so a refreshed segment is never served stale.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref

import numpy as np
from pyroaring import BitMap

from engine.common.lru import HitLRU
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


_interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_interned_lock = threading.Lock()


class MemoKey:
    """A cache key whose hash is computed once. A plan keeps its memo keys
    (``QueryPlan.segment_memo_key``): a tuple of expressions would be hashed again, node by
    node, on every lookup. Raises TypeError for an unhashable part (a list literal)."""

    __slots__ = ("__weakref__", "_hash", "parts")

    def __init__(self, *parts) -> None:
        self.parts = parts
        self._hash = hash(parts)

    @classmethod
    def interned(cls, *parts) -> MemoKey:
        """The one live key equal to ``MemoKey(*parts)``: plans of the same query (a plan
        cache miss, a schema read anew) then hand the decoded cache the very key it holds,
        and each lookup is an identity check instead of comparing expression trees."""
        key = cls(*parts)
        with _interned_lock:
            return _interned.setdefault(key, key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (
            isinstance(other, MemoKey) and self._hash == other._hash and self.parts == other.parts
        )

    def __repr__(self) -> str:
        return f"MemoKey{self.parts!r}"


class DecodedCache:
    """cachetools' LRU weighted by ``_nbytes``, keyed by (segment id, key). A value larger
    than the whole budget is not kept."""

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self._entries = HitLRU(maxsize=budget_bytes, getsizeof=_nbytes)
        # Re-entrant, so that nothing run on the thread holding it (a finalizer started by
        # a garbage collection inside put) can deadlock that thread.
        self._lock = threading.RLock()
        self._tracked: set[int] = set()
        # ids of collected segments whose entries are still to drop (see drop_segment)
        self._dropped: list[int] = []

    @property
    def used(self) -> int:
        """The bytes of the entries kept now."""
        with self._lock:
            self._drop_collected()
            return self._entries.currsize

    def get(self, segment, key):
        with self._lock:
            if self._dropped:
                self._drop_collected()
            # [] (None on a miss): a repeated query's lookups hit, and get() costs twice the
            # Python calls of a hit
            return self._entries[(id(segment), key)]

    def put(self, segment, key, value) -> None:
        with self._lock:
            self._drop_collected()  # a dead segment's id may be this one's now
            seg_id = id(segment)
            if seg_id not in self._tracked:
                try:
                    weakref.finalize(segment, self.drop_segment, seg_id)
                except TypeError:
                    return  # not weak-referenceable: do not cache (its id could be reused)
                self._tracked.add(seg_id)
            # evicts the least recently used; raises ValueError for a value larger than the
            # whole budget, which is then not kept
            with contextlib.suppress(ValueError):
                self._entries[(seg_id, key)] = value

    def forget(self, segment) -> None:
        """Drop ``segment``'s decoded data now (call when unloading or replacing a segment;
        otherwise it goes when the segment object is garbage-collected)."""
        with self._lock:
            self.drop_segment(id(segment))
            self._drop_collected()

    def drop_segment(self, seg_id: int) -> None:
        """Note that the segment ``seg_id`` is gone; its entries go before the next call
        reads or writes. A segment's finalizer calls this, at whatever point a garbage
        collection starts, even inside this cache's own bookkeeping on the thread holding
        the lock, so it only notes (``list.append`` is atomic) and never touches the LRU."""
        self._dropped.append(seg_id)

    def _drop_collected(self) -> None:
        """Drop the entries of the segments noted by drop_segment; under the lock."""
        while self._dropped:
            seg_id = self._dropped.pop()
            self._tracked.discard(seg_id)
            for key in [k for k in self._entries if k[0] == seg_id]:
                del self._entries[key]
