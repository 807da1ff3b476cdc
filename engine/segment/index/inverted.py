"""Inverted index: one roaring bitmap of doc ids per dictionary id.

Buffers: ``<col>.inv`` holds the serialized bitmaps back to back and ``<col>.inv.off``
their byte offsets (cardinality + 1 entries). A lookup deserializes one bitmap from the
memory-mapped file.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap


def docs_grouped_by_id(ids: np.ndarray, cardinality: int, mv_offsets: np.ndarray | None = None):
    """Doc ids ordered by dictionary id, and per-id bounds into them (cardinality + 1).
    For MV columns a doc appears once per entry."""
    if mv_offsets is None:
        docs = np.arange(len(ids), dtype=np.uint32)
    else:
        docs = np.repeat(
            np.arange(len(mv_offsets) - 1, dtype=np.uint32), np.diff(mv_offsets.astype(np.int64))
        )
    order = np.argsort(ids, kind="stable")
    counts = (
        np.bincount(ids, minlength=cardinality) if len(ids) else np.zeros(cardinality, np.int64)
    )
    bounds = np.zeros(cardinality + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return docs[order], bounds


def write_inverted_index(writer, prefix: str, grouped_docs: np.ndarray, bounds: np.ndarray) -> None:
    """Serialize one bitmap per dictionary id."""
    offsets = np.zeros(len(bounds), dtype=np.uint64)
    # A memoryview lets pyroaring bulk-load each slice through the buffer protocol.
    docs = memoryview(np.ascontiguousarray(grouped_docs, dtype=np.uint32))
    with writer.stream(f"{prefix}.inv") as out:
        pos = 0
        for i in range(len(bounds) - 1):
            bitmap = BitMap(docs[bounds[i] : bounds[i + 1]])
            bitmap.run_optimize()
            blob = bitmap.serialize()
            out.write(blob)
            pos += len(blob)
            offsets[i + 1] = pos
    writer.put_array(f"{prefix}.inv.off", offsets)


class InvertedIndexReader:
    """``bitmap(dict_id)`` -> the docs holding that id (a fresh BitMap the caller may mutate)."""

    def __init__(self, store, prefix: str):
        self._offsets = store.array(f"{prefix}.inv.off")
        self._data = store.bytes(f"{prefix}.inv")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def bitmap(self, dict_id: int) -> BitMap:
        if not 0 <= dict_id < len(self):
            return BitMap()
        start, end = int(self._offsets[dict_id]), int(self._offsets[dict_id + 1])
        return BitMap.deserialize(self._data[start:end].tobytes())

    def union(self, dict_ids) -> BitMap:
        """Docs holding any of ``dict_ids``."""
        return BitMap.union(BitMap(), *(self.bitmap(int(i)) for i in dict_ids))


class SortedIndexReader:
    """The index of a sorted column: contiguous doc ranges per dictionary id."""

    def __init__(self, starts: np.ndarray):
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts) - 1

    def sorted_doc_range(self, dict_id: int) -> tuple[int, int]:
        """Half-open ``(start, end)`` doc range of ``dict_id``."""
        return int(self._starts[dict_id]), int(self._starts[dict_id + 1])

    def bitmap(self, dict_id: int) -> BitMap:
        if not 0 <= dict_id < len(self):
            return BitMap()
        start, end = self.sorted_doc_range(dict_id)
        return BitMap(range(start, end))

    def union(self, dict_ids) -> BitMap:
        return BitMap.union(BitMap(), *(self.bitmap(int(i)) for i in dict_ids))
