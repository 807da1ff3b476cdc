"""Read access to one column of a loaded segment. Nothing is read until asked for: every
accessor maps its file on first use and caches only the (memory-mapped) array handle."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from engine.common.errors import SegmentError
from engine.segment.chunked import ChunkedArray
from engine.segment.dictionary import Dictionary
from engine.segment.files import BufferReader
from engine.segment.metadata import ColumnMetadata

# raw forward formats kept as ChunkedArray buffers: the format -> the buffer's suffix
_CHUNKED_RAW = {"raw-zstd": "raw.zst", "raw-chunked": "raw.chunks"}


class ColumnReader:
    """One column. ``metadata`` holds the stats; ``dictionary`` is None for raw columns.
    Values are in stored form: BOOLEAN as INT 0/1, TIMESTAMP as LONG epoch ms."""

    def __init__(self, store: BufferReader, metadata: ColumnMetadata, total_docs: int):
        self._store = store
        self.metadata = metadata
        self.name = metadata.name
        self.total_docs = total_docs
        self._prefix = metadata.file_prefix

    def _key(self, suffix: str) -> str:
        return f"{self._prefix}.{suffix}"

    def _chunked(self, suffix: str) -> ChunkedArray:
        key = self._key(suffix)
        return ChunkedArray(self._store.bytes(key), key)

    def _require_sv(self, what: str) -> None:
        if not self.metadata.single_value:
            raise SegmentError(f"{what} is for single-value columns; {self.name!r} is multi-value")

    def _require_mv(self, what: str) -> None:
        if self.metadata.single_value:
            raise SegmentError(f"{what} is for multi-value columns; {self.name!r} is single-value")

    @functools.cached_property
    def dictionary(self) -> Dictionary | None:
        if not self.metadata.has_dictionary:
            return None
        if self._store.has(self._key("dict")):
            return Dictionary(self.metadata.data_type, self._store.array(self._key("dict")))
        return Dictionary(
            self.metadata.data_type, self._store.arrow_column(self._key("dict.arrow"))
        )

    @functools.cached_property
    def _sorted_starts(self) -> np.ndarray | None:
        key = self._key("sorted")
        return self._store.array(key) if self._store.has(key) else None

    def sorted_starts(self) -> np.ndarray | None:
        """A sorted column's first doc of each dictionary id, plus the doc count at the end
        (``starts[i]:starts[i + 1]`` hold id ``i``); None when the column is not sorted."""
        return self._sorted_starts

    def sorted_doc_range(self, dict_id: int) -> tuple[int, int]:
        """Docs holding ``dict_id`` in a sorted column, as a half-open ``(start, end)``."""
        starts = self._sorted_starts
        if starts is None:
            raise SegmentError(f"column {self.name!r} is not sorted")
        return int(starts[dict_id]), int(starts[dict_id + 1])

    def _ids(self) -> np.ndarray:
        fmt = self.metadata.forward_format
        if fmt == "zstd":
            return self._chunked("fwd.zst").read()
        return self._store.array(self._key("fwd"))

    def dict_ids(self) -> np.ndarray:
        """SV forward index: one dictionary id per doc, in the smallest unsigned width.
        Memory-mapped when stored plain; chunk-compressed columns are decompressed on each
        call (cache the result if you need it twice); a sorted column's ids are expanded
        from its doc ranges."""
        self._require_sv("dict_ids()")
        if self.dictionary is None:
            raise SegmentError(f"column {self.name!r} has no dictionary (it is raw)")
        starts = self._sorted_starts
        if starts is not None:
            dtype = np.dtype(self.metadata.forward_dtype)
            return np.repeat(
                np.arange(len(starts) - 1, dtype=dtype), np.diff(starts.astype(np.int64))
            )
        return self._ids()

    def dict_ids_range(self, start: int, end: int) -> np.ndarray:
        """SV dict ids of docs ``[start, end)``; decompresses only the chunks needed."""
        self._require_sv("dict_ids_range()")
        if self.metadata.forward_format == "zstd":
            return self._chunked("fwd.zst").read_range(start, end)
        return self.dict_ids()[start:end]

    def mv_offsets(self) -> np.ndarray:
        """MV: ``offsets[d]:offsets[d+1]`` are doc d's entries in the flat arrays (length
        total_docs + 1)."""
        self._require_mv("mv_offsets()")
        return self._store.array(self._key("mvoff"))

    def mv_dict_ids(self) -> np.ndarray:
        """MV: the flat dictionary ids of all docs, indexed by ``mv_offsets()``."""
        self._require_mv("mv_dict_ids()")
        if self.dictionary is None:
            raise SegmentError(f"column {self.name!r} has no dictionary (it is raw)")
        return self._ids()

    def raw_values(self) -> pa.Array:
        """The flat values of a raw (no-dictionary) column as Arrow (decompresses all chunks)."""
        fmt = self.metadata.forward_format
        if fmt in _CHUNKED_RAW:
            values = self._chunked(_CHUNKED_RAW[fmt]).read()
            return values if isinstance(values, pa.Array) else pa.array(values)
        return self._store.arrow_column(self._key("raw.arrow"))

    def raw_chunks(self):
        """The raw column's compressed chunks: a ChunkedArray (``chunk(i)``, ``read_range``),
        or for a variable-width column written with the default codec an Arrow IPC reader
        (``get_batch(i)``)."""
        fmt = self.metadata.forward_format
        if fmt in _CHUNKED_RAW:
            return self._chunked(_CHUNKED_RAW[fmt])
        return self._store.arrow_reader(self._key("raw.arrow"))

    def _flat_values(self) -> np.ndarray:
        if self.dictionary is not None:
            ids = self.dict_ids() if self.metadata.single_value else self.mv_dict_ids()
            return self.dictionary.take(ids)
        fmt = self.metadata.forward_format
        if fmt in _CHUNKED_RAW:
            values = self._chunked(_CHUNKED_RAW[fmt]).read()
            if isinstance(values, pa.Array):
                return values.to_numpy(zero_copy_only=False)
            return values
        return self.raw_values().to_numpy(zero_copy_only=False)

    def values(self) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Decoded values: SV -> one numpy array (object dtype for STRING/JSON/BYTES/
        BIG_DECIMAL); MV -> ``(offsets, flat_values)``."""
        flat = self._flat_values()
        if self.metadata.single_value:
            return flat
        return np.asarray(self.mv_offsets()), flat

    @property
    def null_bitmap(self) -> BitMap | None:
        """Docs whose input value was null (they hold the default null value), when the table
        has ``nullHandlingEnabled``; None if no null vector was built."""
        if "nullvec" not in self.metadata.indexes:
            return None
        return BitMap.deserialize(self._store.bytes(self._key("nullvec")).tobytes())

    @functools.cached_property
    def inverted_index(self):
        """Bitmaps of docs per dictionary id (``.bitmap(dict_id)``), None if not built. For a
        sorted column this is the sorted index, which also answers ``.bitmap``."""
        from engine.segment.index.inverted import InvertedIndexReader, SortedIndexReader

        if "inverted" in self.metadata.indexes:
            return InvertedIndexReader(self._store, self._prefix)
        if self._sorted_starts is not None:
            return SortedIndexReader(self._sorted_starts)
        return None

    @functools.cached_property
    def range_index(self):
        """``.doc_ids(lo, hi, lo_inclusive, hi_inclusive)`` -> BitMap, None if not built."""
        from engine.segment.index.range_index import RangeIndexReader

        if "range" not in self.metadata.indexes:
            return None
        return RangeIndexReader(
            self._store, self._prefix, self.dictionary, self._sorted_starts, self.total_docs
        )

    @functools.cached_property
    def bloom_filter(self):
        """``.might_contain(value)`` -> bool, None if not built."""
        from engine.segment.index.bloom import BloomFilterReader

        if "bloom" not in self.metadata.indexes:
            return None
        return BloomFilterReader(self._store, self._prefix, self.metadata.data_type)

    def __repr__(self) -> str:
        return f"ColumnReader({self.name!r}, {self.metadata.data_type}, docs={self.total_docs})"
