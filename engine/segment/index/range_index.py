"""Range index: doc ids ordered by value, so a value range maps to one contiguous slice.

On disk: ``<col>.range.docs.npy`` (doc ids sorted by value, stable) and either
``<col>.range.off.npy`` (per dictionary id start offsets, cardinality + 1) for dictionary
columns, or ``<col>.range.vals.npy`` (the values in the same order) for raw numeric columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pyroaring import BitMap

from engine.segment.files import load_npy, save_npy


def write_range_index_dict(prefix: Path, grouped_docs: np.ndarray, bounds: np.ndarray) -> None:
    save_npy(Path(f"{prefix}.range.docs.npy"), grouped_docs.astype(np.uint32))
    save_npy(Path(f"{prefix}.range.off.npy"), bounds.astype(np.uint64))


def write_range_index_raw(prefix: Path, values: np.ndarray, mv_offsets: np.ndarray | None) -> None:
    if mv_offsets is None:
        docs = np.arange(len(values), dtype=np.uint32)
    else:
        docs = np.repeat(
            np.arange(len(mv_offsets) - 1, dtype=np.uint32), np.diff(mv_offsets.astype(np.int64))
        )
    order = np.argsort(values, kind="stable")
    save_npy(Path(f"{prefix}.range.docs.npy"), docs[order])
    save_npy(Path(f"{prefix}.range.vals.npy"), values[order])


class RangeIndexReader:
    """``doc_ids(lo, hi, ...)``. For a sorted column the doc ranges of the sorted index
    (``sorted_starts``) are used; docs are then contiguous."""

    def __init__(self, prefix: Path, dictionary, sorted_starts: np.ndarray | None = None):
        self._dictionary = dictionary
        self._docs = None
        if sorted_starts is not None:
            self._offsets = sorted_starts
        elif dictionary is not None:
            self._docs = load_npy(Path(f"{prefix}.range.docs.npy"))
            self._offsets = load_npy(Path(f"{prefix}.range.off.npy"))
        else:
            self._docs = load_npy(Path(f"{prefix}.range.docs.npy"))
            self._values = load_npy(Path(f"{prefix}.range.vals.npy"))

    def doc_ids(
        self, lo=None, hi=None, lo_inclusive: bool = True, hi_inclusive: bool = True
    ) -> BitMap:
        """Docs with a value in the range; ``None`` bounds are unbounded."""
        if self._dictionary is not None:
            start_id, end_id = self._dictionary.id_range(lo, hi, lo_inclusive, hi_inclusive)
            if start_id >= end_id:
                return BitMap()
            start, end = int(self._offsets[start_id]), int(self._offsets[end_id])
        else:
            values = self._values
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
            if start >= end:
                return BitMap()
        if self._docs is None:
            return BitMap(range(start, end))
        return BitMap(np.asarray(self._docs[start:end]))
