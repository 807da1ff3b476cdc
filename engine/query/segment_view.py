"""Per-segment column access for the query operators, with caches that live as long as the
loaded segment (string dictionaries decoded to numpy once, sorted columns expanded once)."""

from __future__ import annotations

import weakref

import numpy as np

from engine.query.errors import UnknownColumnError

_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class SegmentView:
    def __init__(self, segment):
        self.segment = segment
        self.n = int(segment.total_docs)
        try:
            self._cache = _CACHES.setdefault(segment, {})
        except TypeError:  # not weak-referenceable: cache per view only
            self._cache = {}

    @property
    def name(self) -> str:
        return self.segment.name

    def has(self, column: str) -> bool:
        return column in self.segment.column_names

    def reader(self, column: str):
        if not self.has(column):
            raise UnknownColumnError(column, f"segment {self.segment.name}")
        return self.segment.column(column)

    def meta(self, column: str):
        return self.reader(column).metadata

    def is_dict_sv(self, column: str) -> bool:
        meta = self.meta(column)
        return meta.single_value and meta.has_dictionary

    def dictionary(self, column: str) -> np.ndarray:
        """Sorted distinct values as numpy (object dtype for strings/bytes)."""
        key = ("dict", column)
        if key not in self._cache:
            self._cache[key] = np.asarray(self.reader(column).dictionary.to_numpy())
        return self._cache[key]

    def dict_ids(self, column: str) -> np.ndarray:
        """The SV forward index, decoded once per loaded segment: forward indexes are
        chunk-compressed on disk and a sorted column's ids are expanded from its doc ranges,
        so keeping the decoded array (like Pinot's HEAP load mode) makes scans memory-speed."""
        key = ("ids", column)
        ids = self._cache.get(key)
        if ids is None:
            ids = self._cache[key] = self.reader(column).dict_ids()
        return ids

    def sv_values(self, column: str, docs: np.ndarray | None) -> np.ndarray:
        """Values of an SV column for ``docs`` (sorted int64 ids) or all docs when None."""
        reader = self.reader(column)
        if reader.dictionary is not None:
            ids = self.dict_ids(column)
            return self.dictionary(column)[ids if docs is None else ids[docs]]
        key = ("raw", column)
        if key not in self._cache:
            self._cache[key] = np.asarray(reader.values())
        values = self._cache[key]
        return values if docs is None else values[docs]

    def mv(self, column: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """(offsets, flat dict ids or None, dictionary or flat raw values)."""
        reader = self.reader(column)
        key = ("mv", column)
        if key not in self._cache:
            offsets = np.asarray(reader.mv_offsets(), dtype=np.int64)
            if reader.dictionary is not None:
                self._cache[key] = (
                    offsets,
                    np.asarray(reader.mv_dict_ids()),
                    self.dictionary(column),
                )
            else:
                _, flat = reader.values()
                self._cache[key] = (offsets, None, np.asarray(flat))
        return self._cache[key]
