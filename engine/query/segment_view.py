"""Per-segment column access for the query operators. Decoded data (string dictionaries as
numpy, decompressed forward indexes, expanded sorted columns) goes through the query engine's
``engine.query.decoded_cache.DecodedCache`` when one is given, else lives for one query."""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from engine.query.decoded_cache import DecodedCache
from engine.query.errors import UnknownColumnError


class _SegmentCache:
    """dict-like facade of the shared cache for one segment (plus a per-query memo)."""

    def __init__(self, segment, shared: DecodedCache | None):
        self.segment = segment
        self.shared = shared
        self.local: dict = {}

    def get(self, key, default=None):
        value = self.local.get(key)
        if value is None and self.shared is not None:
            value = self.shared.get(self.segment, key)
            if value is not None:
                self.local[key] = value
        return default if value is None else value

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value) -> None:
        self.local[key] = value
        if self.shared is not None:
            self.shared.put(self.segment, key, value)


class SegmentView:
    def __init__(self, segment, cache: DecodedCache | None = None, null_handling: bool = False):
        self.segment = segment
        self.n = int(segment.total_docs)
        self._cache = _SegmentCache(segment, cache)
        self._readers: dict = {}  # asked for ~10 times per segment by one query
        # enableNullHandling: NULL is a value of its own (SQL's); else stored defaults are the
        # values, and only IS [NOT] NULL and COALESCE read the null value vectors
        self.null_handling = null_handling

    @property
    def name(self) -> str:
        return self.segment.name

    def has(self, column: str) -> bool:
        return self.segment.has_column(column)

    def reader(self, column: str):
        found = self._readers.get(column)
        if found is None:
            if not self.segment.has_column(column):
                raise UnknownColumnError(column, f"segment {self.segment.name}")
            found = self._readers[column] = self.segment.column(column)
        return found

    def meta(self, column: str):
        return self.reader(column).metadata

    def is_dict_sv(self, column: str) -> bool:
        meta = self.meta(column)
        return meta.single_value and meta.has_dictionary

    def memo(self, key):
        """A value kept for this segment by ``remember`` (None when absent or evicted)."""
        return self._cache.get(key)

    def remember(self, key, value) -> None:
        """Keep ``value`` (not None) for this segment across queries, in the decoded cache."""
        self._cache[key] = value

    def null_bitmap(self, column: str) -> BitMap | None:
        """The docs whose ``column`` is NULL (its null value vector), None when there are
        none or the segment keeps no null vector for it; read once per segment."""
        key = ("nullvec", column)
        found = self._cache.get(key)
        if found is None:
            bitmap = self.reader(column).null_bitmap
            found = self._cache[key] = (bitmap if bitmap else None,)
        return found[0]

    def null_mask(self, column: str) -> np.ndarray | None:
        """``null_bitmap`` as a read-only bool array over every doc (None: no NULL)."""
        key = ("nullmask", column)
        found = self._cache.get(key)
        if found is None:
            bitmap = self.null_bitmap(column)
            mask = None
            if bitmap is not None:
                mask = np.zeros(self.n, dtype=bool)
                mask[np.frombuffer(bitmap.to_array(), dtype=np.uint32)] = True
                mask.flags.writeable = False
            found = self._cache[key] = (mask,)
        return found[0]

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

    def block_bounds(self, column: str, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) of each ``block_rows`` docs of a raw numeric SV column (NaN ignored),
        computed once per segment: a zone map that lets a range filter skip or take whole
        blocks, as a segment's min/max does for whole segments."""
        key = ("bounds", column, block_rows)
        bounds = self._cache.get(key)
        if bounds is None:
            values = self.sv_values(column, None)
            starts = np.arange(0, len(values), block_rows)
            bounds = self._cache[key] = (
                np.fmin.reduceat(values, starts) if len(values) else values[:0],
                np.fmax.reduceat(values, starts) if len(values) else values[:0],
            )
        return bounds

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
