"""Range index.

Single-value columns get a bit-sliced index (as Pinot's range index v2): each doc's key is
its dictionary id (or, for raw columns, its rank among the column's distinct values, kept in
``<col>.range.vals.npy``), and slice ``i`` is a roaring bitmap of the docs whose key has bit
``i`` set. ``key <= c`` is then a handful of bitmap operations per bit, whatever the range
width. Multi-value columns store doc ids ordered by key with per-key offsets instead (a doc
matches when any of its values is in range). Sorted columns need no file: their sorted index
already maps a dictionary id range to one doc range.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap


def _bitmap(docs: np.ndarray) -> BitMap:
    return BitMap(memoryview(np.ascontiguousarray(docs, dtype=np.uint32)))


def write_bit_sliced(writer, prefix: str, keys: np.ndarray) -> None:
    """Write one bitmap per bit of ``keys`` (non-negative ints, one per doc)."""
    keys = np.asarray(keys)
    num_bits = max(1, int(keys.max()).bit_length()) if len(keys) else 1
    offsets = np.zeros(num_bits + 1, dtype=np.uint64)
    with writer.stream(f"{prefix}.range.bsi") as out:
        for i in range(num_bits):
            bitmap = _bitmap(np.flatnonzero((keys >> i) & 1))
            bitmap.run_optimize()
            blob = bitmap.serialize()
            out.write(blob)
            offsets[i + 1] = offsets[i] + len(blob)
    writer.put_array(f"{prefix}.range.bsi.off", offsets)


def write_range_index(
    writer,
    prefix: str,
    keys: np.ndarray,
    mv_offsets: np.ndarray | None,
    distinct: np.ndarray | None,
) -> None:
    """``keys``: dict ids or ranks per entry; ``distinct``: the sorted distinct values for a raw
    column (None for dictionary columns)."""
    if distinct is not None:
        writer.put_array(f"{prefix}.range.vals", distinct)
    if mv_offsets is None:
        write_bit_sliced(writer, prefix, keys)
        return
    docs = np.repeat(
        np.arange(len(mv_offsets) - 1, dtype=np.uint32), np.diff(mv_offsets.astype(np.int64))
    )
    order = np.argsort(keys, kind="stable")
    bounds = np.zeros(int(keys.max()) + 2 if len(keys) else 1, dtype=np.uint64)
    np.cumsum(np.bincount(keys, minlength=len(bounds) - 1), out=bounds[1:])
    writer.put_array(f"{prefix}.range.docs", docs[order])
    writer.put_array(f"{prefix}.range.off", bounds)


class RangeIndexReader:
    """``doc_ids(lo, hi, lo_inclusive, hi_inclusive)`` -> BitMap of matching docs."""

    def __init__(
        self, store, prefix: str, dictionary, sorted_starts: np.ndarray | None, total_docs: int
    ):
        self._dictionary = dictionary
        self._sorted_starts = sorted_starts
        self._total_docs = total_docs
        vals = f"{prefix}.range.vals"
        self._distinct = store.array(vals) if store.has(vals) else None
        self._docs = self._offsets = self._slices = None
        if sorted_starts is not None:
            return
        if store.has(f"{prefix}.range.bsi"):
            self._slice_offsets = store.array(f"{prefix}.range.bsi.off")
            self._slices = store.bytes(f"{prefix}.range.bsi")
        else:
            self._docs = store.array(f"{prefix}.range.docs")
            self._offsets = store.array(f"{prefix}.range.off")

    def _key_range(self, lo, hi, lo_inclusive: bool, hi_inclusive: bool) -> tuple[int, int]:
        """Half-open range of keys (dict ids or ranks) matching the value range."""
        if self._dictionary is not None:
            return self._dictionary.id_range(lo, hi, lo_inclusive, hi_inclusive)
        values = self._distinct
        start = (
            0
            if lo is None
            else int(np.searchsorted(values, lo, side="left" if lo_inclusive else "right"))
        )
        end = (
            len(values)
            if hi is None
            else int(np.searchsorted(values, hi, side="right" if hi_inclusive else "left"))
        )
        return start, max(start, end)

    def _slice(self, i: int) -> BitMap:
        start, end = int(self._slice_offsets[i]), int(self._slice_offsets[i + 1])
        return BitMap.deserialize(self._slices[start:end].tobytes())

    def _at_most(self, c: int, all_docs: BitMap) -> BitMap:
        """Docs whose key is <= c (bit-sliced comparison, most significant bit first)."""
        num_bits = len(self._slice_offsets) - 1
        if c < 0:
            return BitMap()
        if c >= (1 << num_bits) - 1:
            return all_docs.copy()
        less, equal = BitMap(), all_docs.copy()
        for i in range(num_bits - 1, -1, -1):
            bits = self._slice(i)
            if (c >> i) & 1:
                less |= equal - bits
                equal &= bits
            else:
                equal -= bits
        return less | equal

    def doc_ids(
        self, lo=None, hi=None, lo_inclusive: bool = True, hi_inclusive: bool = True
    ) -> BitMap:
        """Docs with a value in the range; ``None`` bounds are unbounded."""
        start, end = self._key_range(lo, hi, lo_inclusive, hi_inclusive)
        if start >= end:
            return BitMap()
        if self._sorted_starts is not None:
            return BitMap(range(int(self._sorted_starts[start]), int(self._sorted_starts[end])))
        if self._slices is None:
            begin, stop = (
                int(self._offsets[start]),
                int(self._offsets[min(end, len(self._offsets) - 1)]),
            )
            return _bitmap(self._docs[begin:stop])
        all_docs = BitMap(range(self._total_docs))
        result = self._at_most(end - 1, all_docs)
        if start > 0:
            result -= self._at_most(start - 1, all_docs)
        return result
