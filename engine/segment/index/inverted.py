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


def _single_doc_template() -> np.ndarray | None:
    """The serialized form of a one-doc bitmap, whose only varying bytes are the doc's high
    16 bits (the container key, bytes 8-9) and low 16 bits (bytes 16-17); None if this
    pyroaring serializes differently (then every bitmap goes through pyroaring)."""
    template = np.frombuffer(BitMap([0]).serialize(), dtype=np.uint8).copy()
    if len(template) != 18:
        return None
    probe = template.copy()
    probe[8:10] = np.frombuffer(np.uint16(0x1234).astype("<u2").tobytes(), np.uint8)
    probe[16:18] = np.frombuffer(np.uint16(0xABCD).astype("<u2").tobytes(), np.uint8)
    return template if probe.tobytes() == BitMap([0x1234ABCD]).serialize() else None


_SINGLE = _single_doc_template()
_SINGLE_CHUNK = 1 << 16


def write_inverted_index(writer, prefix: str, grouped_docs: np.ndarray, bounds: np.ndarray) -> None:
    """Serialize one bitmap per dictionary id. An id with one doc (every id of a unique
    column, where a loop per id would be most of a segment build) is written for all such
    ids at once from its fixed 18-byte form; the others go through pyroaring one by one."""
    docs32 = np.ascontiguousarray(grouped_docs, dtype=np.uint32)
    counts = np.diff(bounds)
    single = np.flatnonzero(counts == 1) if _SINGLE is not None else np.empty(0, np.int64)
    sizes = np.full(len(counts), 0 if _SINGLE is None else len(_SINGLE), dtype=np.int64)
    blobs = {}
    # A memoryview lets pyroaring bulk-load each slice through the buffer protocol.
    docs = memoryview(docs32)
    for i in np.flatnonzero(counts != 1) if _SINGLE is not None else range(len(counts)):
        bitmap = BitMap(docs[bounds[i] : bounds[i + 1]])
        bitmap.run_optimize()
        blobs[int(i)] = blob = bitmap.serialize()
        sizes[i] = len(blob)
    offsets = np.zeros(len(bounds), dtype=np.uint64)
    np.cumsum(sizes, out=offsets[1:])
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    for i, blob in blobs.items():
        data[int(offsets[i]) : int(offsets[i + 1])] = np.frombuffer(blob, dtype=np.uint8)
    for start in range(0, len(single), _SINGLE_CHUNK):
        ids = single[start : start + _SINGLE_CHUNK]
        values = docs32[bounds[ids]]
        records = np.tile(_SINGLE, (len(ids), 1))
        records[:, 8:10] = (values >> 16).astype("<u2").view(np.uint8).reshape(-1, 2)
        records[:, 16:18] = (values & 0xFFFF).astype("<u2").view(np.uint8).reshape(-1, 2)
        at = offsets[ids].astype(np.int64)[:, None] + np.arange(len(_SINGLE))
        data[at.ravel()] = records.ravel()
    with writer.stream(f"{prefix}.inv") as out:
        out.write(memoryview(data))
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
