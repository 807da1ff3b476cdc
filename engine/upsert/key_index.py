"""The primary-key map of one partition: key -> slot (a row of ``engine.upsert.entries``).

Pinot keeps a ConcurrentHashMap of key objects, the first thing its users complain about
(16 GB maps, apache/pinot#9529). Integer and hashed keys here live in sorted numpy arrays
instead: a large sorted ``base``, a sorted ``delta`` folded into ``base`` once it holds
``DELTA_LIMIT`` keys (or an eighth of ``base``), and a small sorted ``recent`` that a consumed
batch's new keys go into, merged into ``delta`` at ``RECENT_LIMIT`` keys (so a small batch
copies a few thousand keys, not the whole delta). A key costs 8 bytes (16 hashed) plus a
4-byte slot, with no Python object. Lookups are vectorised binary searches. Raw keys of other
types (``hashFunction: NONE`` on a string or composite key) use a dict, exact as Pinot's map.
"""

from __future__ import annotations

import numpy as np

from engine.upsert.keys import Keys

DELTA_LIMIT = 1 << 16
RECENT_LIMIT = 1 << 12
LEVELS = 3  # base, delta, recent
# from this many keys a lookup sorts them first: binary searches of sorted keys walk the
# stored array in order (cache-friendly), about 4x less CPU for a segment's 250k keys in
# random order (a preload, a replay), more than the sort costs
SORTED_LOOKUP_MIN = 1 << 12


class SortedKeyIndex:
    """int64 keys (a 128-bit digest's first half; the second half is checked against
    ``low_of(slots)``, the entries' copy, so equal first halves are told apart)."""

    def __init__(self, low_of=None) -> None:
        self._low_of = low_of
        self._keys = [np.zeros(0, np.int64) for _ in range(LEVELS)]  # base, delta, recent
        self._slots = [np.zeros(0, np.int32) for _ in range(LEVELS)]
        self._dead = 0  # removed entries still in the arrays (slot -1)

    def __len__(self) -> int:
        return sum(len(k) for k in self._keys) - self._dead

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._keys + self._slots)

    def lookup(self, keys: Keys) -> np.ndarray:
        """The slot of each key, -1 when absent."""
        if len(keys) < SORTED_LOOKUP_MIN:
            return self._lookup(keys)
        order = np.argsort(keys.main, kind="stable")
        out = np.empty(len(keys), dtype=np.int64)
        out[order] = self._lookup(keys.take(order))
        return out

    def _lookup(self, keys: Keys) -> np.ndarray:
        out = np.full(len(keys), -1, dtype=np.int64)
        for level in range(LEVELS):
            self._find(level, keys, out)
        return out

    def _find(self, level: int, keys: Keys, out: np.ndarray) -> None:
        stored, slots = self._keys[level], self._slots[level]
        if not len(stored) or not len(keys):
            return
        pos = np.searchsorted(stored, keys.main)
        inside = pos < len(stored)
        hit = np.zeros(len(keys), dtype=bool)
        hit[inside] = stored[pos[inside]] == keys.main[inside]
        found = slots[pos[hit]].astype(np.int64)
        if keys.low is None:
            out[hit] = np.where(found >= 0, found, out[hit])
            return
        rows = np.flatnonzero(hit)
        match = (found >= 0) & (self._low_of(np.maximum(found, 0)) == keys.low[rows])
        out[rows[match]] = found[match]
        # equal first halves of different digests (about 2^-64 a pair): walk their run
        for row, start in zip(rows[~match], pos[rows[~match]], strict=True):
            end = np.searchsorted(stored, keys.main[row], side="right")
            for slot in slots[start:end]:
                if slot >= 0 and self._low_of(np.array([slot]))[0] == keys.low[row]:
                    out[row] = slot

    def insert(self, keys: Keys, slots: np.ndarray) -> None:
        """Add absent, distinct ``keys`` with their slots."""
        if not len(keys):
            return
        order = np.argsort(keys.main, kind="stable")
        new_keys, new_slots = keys.main[order], slots[order].astype(np.int32)
        level = 2 if len(new_keys) < RECENT_LIMIT else 1
        self._merge_into(level, new_keys, new_slots)
        if len(self._keys[2]) >= RECENT_LIMIT:
            self._merge_into(1, self._keys[2], self._slots[2])
            self._keys[2], self._slots[2] = np.zeros(0, np.int64), np.zeros(0, np.int32)
        if len(self._keys[1]) >= max(DELTA_LIMIT, len(self._keys[0]) // 8):
            self._fold()

    def _merge_into(self, level: int, keys: np.ndarray, slots: np.ndarray) -> None:
        """Sorted ``keys`` into the sorted ``level`` (one pass over both)."""
        at = np.searchsorted(self._keys[level], keys)
        self._keys[level] = np.insert(self._keys[level], at, keys)
        self._slots[level] = np.insert(self._slots[level], at, slots)

    def remove(self, keys: Keys, slots: np.ndarray) -> None:
        """Forget ``keys`` (present, with these slots)."""
        for level in range(LEVELS):
            stored, stored_slots = self._keys[level], self._slots[level]
            if not len(stored):
                continue
            lo = np.searchsorted(stored, keys.main, side="left")
            hi = np.searchsorted(stored, keys.main, side="right")
            for start, end, slot in zip(lo, hi, slots, strict=True):
                run = stored_slots[start:end]
                hit = np.flatnonzero(run == slot)
                if len(hit):
                    run[hit] = -1
                    self._dead += len(hit)
        if self._dead > len(self) // 4:
            self._fold()

    def _fold(self) -> None:
        keys = np.concatenate(self._keys)
        slots = np.concatenate(self._slots)
        live = slots >= 0
        keys, slots = keys[live], slots[live]
        order = np.argsort(keys, kind="stable")
        self._keys = [keys[order]] + [np.zeros(0, np.int64) for _ in range(LEVELS - 1)]
        self._slots = [slots[order]] + [np.zeros(0, np.int32) for _ in range(LEVELS - 1)]
        self._dead = 0


class DictKeyIndex:
    """Raw keys (Python values or tuples) -> slot."""

    def __init__(self) -> None:
        self._map: dict = {}

    def __len__(self) -> int:
        return len(self._map)

    @property
    def nbytes(self) -> int:
        import sys

        return sys.getsizeof(self._map) + sum(sys.getsizeof(k) for k in self._map)

    def lookup(self, keys: Keys) -> np.ndarray:
        get = self._map.get
        return np.fromiter((get(k, -1) for k in keys.main), np.int64, len(keys))

    def insert(self, keys: Keys, slots: np.ndarray) -> None:
        self._map.update(zip(keys.main.tolist(), slots.tolist(), strict=True))

    def remove(self, keys: Keys, slots: np.ndarray) -> None:
        for key in keys.main.tolist():
            self._map.pop(key, None)


def key_index_for(integer_or_hashed: bool, low_of=None):
    return SortedKeyIndex(low_of) if integer_or_hashed else DictKeyIndex()
