"""Column values of a segment's docs, for replaying a segment into the metadata and for reading
the previous version of a row in a partial upsert. Works on anything with the reader API of
``engine.segment.ImmutableSegment`` (a consuming segment's snapshot too); each column is
decoded once per ``SegmentRows``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from engine.ingest.coercion import NULL_COLUMN_PREFIX


class SegmentRows:
    def __init__(self, segment) -> None:
        self.segment = segment
        self.n = int(segment.total_docs)
        self._values: dict[str, object] = {}
        self._nulls: dict[str, np.ndarray] = {}

    def values(self, column: str):
        """SV: a numpy array over every doc; MV: (offsets, flat values)."""
        found = self._values.get(column)
        if found is None:
            found = self._values[column] = self.segment.column(column).values()
        return found

    def nulls(self, column: str) -> np.ndarray:
        found = self._nulls.get(column)
        if found is None:
            found = np.zeros(self.n, dtype=bool)
            bitmap = self.segment.column(column).null_bitmap if self.has(column) else None
            if bitmap:
                docs = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
                found[docs[docs < self.n]] = True
            self._nulls[column] = found
        return found

    def has(self, column: str) -> bool:
        return self.segment.has_column(column)

    def table(self, columns: list[str]) -> pa.Table:
        """The SV ``columns`` of every doc, with their ``$null$`` flags."""
        arrays, names = [], []
        for column in columns:
            values = self.values(column)
            arrays += [pa.array(values), pa.array(self.nulls(column))]
            names += [column, NULL_COLUMN_PREFIX + column]
        return pa.Table.from_arrays(arrays, names=names)

    def row(self, doc: int, columns: list[str]) -> tuple[dict, set[str]]:
        """(column -> value, columns that are null) of one doc; MV values as lists."""
        out, null = {}, set()
        for column in columns:
            values = self.values(column)
            if isinstance(values, tuple):
                offsets, flat = values
                out[column] = flat[offsets[doc] : offsets[doc + 1]].tolist()
            else:
                value = values[doc]
                out[column] = value.item() if isinstance(value, np.generic) else value
            if self.nulls(column)[doc]:
                null.add(column)
        return out, null
