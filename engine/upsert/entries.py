"""What the map holds per primary key (Pinot's ``RecordLocation``), one row per slot in growable
numpy arrays: where the key's current doc is (segment id and doc id packed in an int64), its
comparison value, whether that doc is a delete (tombstone), and a hashed key's second half.
Freed slots are reused."""

from __future__ import annotations

import numpy as np

NO_SEGMENT = -1


def pack(segment_ids, doc_ids) -> np.ndarray:
    return (np.asarray(segment_ids, dtype=np.int64) << 32) | np.asarray(doc_ids, dtype=np.int64)


def segment_of(locations: np.ndarray) -> np.ndarray:
    return locations >> 32


def doc_of(locations: np.ndarray) -> np.ndarray:
    return locations & 0xFFFFFFFF


class Entries:
    """``cmp_dtype``: int64 or float64 for numeric comparison values, object otherwise (bytes
    in Java's order, tuples for several comparison columns)."""

    def __init__(self, cmp_dtype, hashed: bool, key_dtype=np.int64) -> None:
        self.key = np.zeros(0, key_dtype)  # the key (a digest's first half), for removals
        self.location = np.zeros(0, np.int64)
        self.cmp = np.zeros(0, cmp_dtype)
        self.deleted = np.zeros(0, bool)
        self.low = np.zeros(0, np.int64) if hashed else None
        self._free: list[np.ndarray] = []
        self.size = 0  # slots ever handed out (the arrays' used length)

    @property
    def nbytes(self) -> int:
        arrays = [self.key, self.location, self.cmp, self.deleted]
        arrays += [self.low] if self.low is not None else []
        total = sum(a.nbytes for a in arrays) + sum(f.nbytes for f in self._free)
        if self.cmp.dtype == object:
            total += sum(_object_bytes(v) for v in self.cmp[: self.size])
        return total

    def allocate(self, n: int) -> np.ndarray:
        """``n`` slots (reused ones first); their fields are to be written by the caller."""
        taken = []
        while n and self._free:
            free = self._free.pop()
            use, rest = free[:n], free[n:]
            if len(rest):
                self._free.append(rest)
            taken.append(use)
            n -= len(use)
        if n:
            start = self.size
            self._grow(start + n)
            self.size = start + n
            taken.append(np.arange(start, start + n, dtype=np.int64))
        return np.concatenate(taken) if taken else np.zeros(0, np.int64)

    def release(self, slots: np.ndarray) -> None:
        if len(slots):
            self.location[slots] = NO_SEGMENT
            if self.key.dtype == object:
                self.key[slots] = None
            self._free.append(np.asarray(slots, dtype=np.int64).copy())

    def _grow(self, needed: int) -> None:
        if needed <= len(self.location):
            return
        capacity = max(needed, int(len(self.location) * 1.25) + 1024)
        self.key = _resized(self.key, capacity, None)
        self.location = _resized(self.location, capacity, NO_SEGMENT)
        self.cmp = _resized(self.cmp, capacity, None)
        self.deleted = _resized(self.deleted, capacity, False)
        if self.low is not None:
            self.low = _resized(self.low, capacity, 0)

    def live_slots(self) -> np.ndarray:
        return np.flatnonzero(self.location[: self.size] != NO_SEGMENT)


def _resized(array: np.ndarray, capacity: int, fill) -> np.ndarray:
    out = np.empty(capacity, dtype=array.dtype)
    out[: len(array)] = array
    if fill is not None:
        out[len(array) :] = fill
    return out


def _object_bytes(value) -> int:
    import sys

    return sys.getsizeof(value)
