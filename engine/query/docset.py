"""Sets of matching doc ids inside one segment, in whichever form is cheapest.

``ALL``/``EMPTY`` need no memory, ``RANGE`` is a half-open ``[start, end)`` (sorted index),
``BITMAP`` a pyroaring BitMap (inverted and range indexes), ``MASK`` a numpy bool array (scans)
and ``IDS`` a sorted int64 array (scans restricted to candidates). AND / OR / NOT keep the
compact forms when both sides allow it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap


@dataclass
class DocSet:
    n: int  # total docs of the segment
    kind: str  # "all" | "empty" | "range" | "bitmap" | "mask" | "ids"
    start: int = 0
    end: int = 0
    bitmap: BitMap | None = None
    mask: np.ndarray | None = None
    doc_ids: np.ndarray | None = None

    @classmethod
    def all(cls, n: int) -> DocSet:
        return cls(n, "all") if n else cls(n, "empty")

    @classmethod
    def empty(cls, n: int) -> DocSet:
        return cls(n, "empty")

    @classmethod
    def range(cls, n: int, start: int, end: int) -> DocSet:
        if end <= start:
            return cls(n, "empty")
        if start <= 0 and end >= n:
            return cls(n, "all")
        return cls(n, "range", start=start, end=end)

    @classmethod
    def of_bitmap(cls, n: int, bitmap: BitMap) -> DocSet:
        return cls(n, "bitmap", bitmap=bitmap) if bitmap else cls(n, "empty")

    @classmethod
    def of_mask(cls, mask: np.ndarray) -> DocSet:
        return cls(len(mask), "mask", mask=mask)

    @classmethod
    def of_ids(cls, n: int, ids: np.ndarray) -> DocSet:
        return (
            cls(n, "ids", doc_ids=ids.astype(np.int64, copy=False)) if len(ids) else cls(n, "empty")
        )

    def count(self) -> int:
        if self.kind == "all":
            return self.n
        if self.kind == "empty":
            return 0
        if self.kind == "range":
            return self.end - self.start
        if self.kind == "bitmap":
            return len(self.bitmap)
        if self.kind == "mask":
            return int(np.count_nonzero(self.mask))
        return len(self.doc_ids)

    def ids(self) -> np.ndarray:
        """Sorted int64 doc ids."""
        if self.kind == "all":
            return np.arange(self.n, dtype=np.int64)
        if self.kind == "empty":
            return np.zeros(0, dtype=np.int64)
        if self.kind == "range":
            return np.arange(self.start, self.end, dtype=np.int64)
        if self.kind == "bitmap":
            return np.frombuffer(self.bitmap.to_array(), dtype=np.uint32).astype(np.int64)
        if self.kind == "mask":
            return np.flatnonzero(self.mask)
        return self.doc_ids

    def as_mask(self) -> np.ndarray:
        if self.kind == "mask":
            return self.mask
        mask = np.zeros(self.n, dtype=bool)
        if self.kind == "all":
            mask[:] = True
        elif self.kind == "range":
            mask[self.start : self.end] = True
        elif self.kind != "empty":
            mask[self.ids()] = True
        return mask

    def as_bitmap(self) -> BitMap:
        if self.kind == "bitmap":
            return self.bitmap
        if self.kind in ("range", "all"):
            bitmap = BitMap()
            bitmap.add_range(
                self.start if self.kind == "range" else 0,
                self.end if self.kind == "range" else self.n,
            )
            return bitmap
        if self.kind == "empty":
            return BitMap()
        return BitMap(self.ids().astype(np.uint32))


def intersect(a: DocSet, b: DocSet) -> DocSet:
    if a.kind == "empty" or b.kind == "all":
        return a
    if b.kind == "empty" or a.kind == "all":
        return b
    if a.kind == "range" and b.kind == "range":
        return DocSet.range(a.n, max(a.start, b.start), min(a.end, b.end))
    if "mask" in (a.kind, b.kind):
        if a.kind == "ids" or b.kind == "ids":
            ids, other = (a, b) if a.kind == "ids" else (b, a)
            return DocSet.of_ids(a.n, ids.doc_ids[other.as_mask()[ids.doc_ids]])
        return DocSet.of_mask(a.as_mask() & b.as_mask())
    if a.kind == "ids" or b.kind == "ids":
        ids, other = (a, b) if a.kind == "ids" else (b, a)
        if other.kind == "range":
            keep = (ids.doc_ids >= other.start) & (ids.doc_ids < other.end)
            return DocSet.of_ids(a.n, ids.doc_ids[keep])
        return DocSet.of_ids(a.n, np.intersect1d(ids.doc_ids, other.ids(), assume_unique=True))
    return DocSet.of_bitmap(a.n, a.as_bitmap() & b.as_bitmap())


def union(a: DocSet, b: DocSet) -> DocSet:
    if a.kind == "all" or b.kind == "empty":
        return a
    if b.kind == "all" or a.kind == "empty":
        return b
    if a.kind == "range" and b.kind == "range" and a.start <= b.end and b.start <= a.end:
        return DocSet.range(a.n, min(a.start, b.start), max(a.end, b.end))
    if "mask" in (a.kind, b.kind) or (a.kind == "range" and b.kind == "range"):
        return DocSet.of_mask(a.as_mask() | b.as_mask())  # disjoint ranges: a mask is a memset
    return DocSet.of_bitmap(a.n, a.as_bitmap() | b.as_bitmap())


def complement(a: DocSet) -> DocSet:
    if a.kind == "all":
        return DocSet.empty(a.n)
    if a.kind == "empty":
        return DocSet.all(a.n)
    if a.kind == "bitmap":
        flipped = BitMap.flip(a.bitmap, 0, a.n)
        return DocSet.of_bitmap(a.n, flipped)
    if a.kind == "range":
        if a.start == 0:
            return DocSet.range(a.n, a.end, a.n)
        if a.end == a.n:
            return DocSet.range(a.n, 0, a.start)
    return DocSet.of_mask(~a.as_mask())
