"""Read access to one column of a loaded segment. Nothing is read until asked for: every
accessor maps its file on first use and caches only the (memory-mapped) array handle."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.common.errors import SegmentError
from engine.segment.chunked import ChunkedArray
from engine.segment.dictionary import Dictionary
from engine.segment.files import load_npy, open_arrow, read_arrow_column
from engine.segment.metadata import ColumnMetadata


class ColumnReader:
    """One column. ``metadata`` holds the stats; ``dictionary`` is None for raw columns.
    Values are in stored form: BOOLEAN as INT 0/1, TIMESTAMP as LONG epoch ms."""

    def __init__(self, seg_dir: Path, metadata: ColumnMetadata, total_docs: int):
        self._dir = seg_dir
        self.metadata = metadata
        self.name = metadata.name
        self.total_docs = total_docs
        self._prefix = seg_dir / metadata.file_prefix

    def _path(self, suffix: str) -> Path:
        return Path(f"{self._prefix}.{suffix}")

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
        npy = self._path("dict.npy")
        if npy.exists():
            return Dictionary(self.metadata.data_type, load_npy(npy))
        return Dictionary(self.metadata.data_type, read_arrow_column(self._path("dict.arrow")))

    @functools.cached_property
    def _sorted_starts(self) -> np.ndarray | None:
        path = self._path("sorted.npy")
        return load_npy(path) if path.exists() else None

    def sorted_doc_range(self, dict_id: int) -> tuple[int, int]:
        """Docs holding ``dict_id`` in a sorted column, as a half-open ``(start, end)``."""
        starts = self._sorted_starts
        if starts is None:
            raise SegmentError(f"column {self.name!r} is not sorted")
        return int(starts[dict_id]), int(starts[dict_id + 1])

    def _ids(self) -> np.ndarray:
        fmt = self.metadata.forward_format
        if fmt == "zstd":
            return ChunkedArray(self._path("fwd.zst")).read()
        return load_npy(self._path("fwd.npy"))

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
            return ChunkedArray(self._path("fwd.zst")).read_range(start, end)
        return self.dict_ids()[start:end]

    def mv_offsets(self) -> np.ndarray:
        """MV: ``offsets[d]:offsets[d+1]`` are doc d's entries in the flat arrays (length
        total_docs + 1)."""
        self._require_mv("mv_offsets()")
        return load_npy(self._path("mvoff.npy"))

    def mv_dict_ids(self) -> np.ndarray:
        """MV: the flat dictionary ids of all docs, indexed by ``mv_offsets()``."""
        self._require_mv("mv_dict_ids()")
        if self.dictionary is None:
            raise SegmentError(f"column {self.name!r} has no dictionary (it is raw)")
        return self._ids()

    def raw_values(self) -> pa.Array:
        """The flat values of a raw (no-dictionary) column as Arrow (decompresses all chunks)."""
        if self.metadata.forward_format == "raw-zstd":
            return pa.array(ChunkedArray(self._path("raw.zst")).read())
        return read_arrow_column(self._path("raw.arrow"))

    def raw_chunks(self):
        """The raw column's zstd chunks: a ChunkedArray (``chunk(i)``, ``read_range``) for
        fixed-width types, an Arrow IPC reader (``get_batch(i)``) for variable-width ones."""
        if self.metadata.forward_format == "raw-zstd":
            return ChunkedArray(self._path("raw.zst"))
        return open_arrow(self._path("raw.arrow"))

    def _flat_values(self) -> np.ndarray:
        if self.dictionary is not None:
            ids = self.dict_ids() if self.metadata.single_value else self.mv_dict_ids()
            return self.dictionary.take(ids)
        if self.metadata.forward_format == "raw-zstd":
            return ChunkedArray(self._path("raw.zst")).read()
        return self.raw_values().to_numpy(zero_copy_only=False)

    def values(self) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Decoded values: SV -> one numpy array (object dtype for STRING/JSON/BYTES/
        BIG_DECIMAL); MV -> ``(offsets, flat_values)``."""
        flat = self._flat_values()
        if self.metadata.single_value:
            return flat
        return np.asarray(self.mv_offsets()), flat

    @functools.cached_property
    def inverted_index(self):
        """Bitmaps of docs per dictionary id (``.bitmap(dict_id)``), None if not built. For a
        sorted column this is the sorted index, which also answers ``.bitmap``."""
        from engine.segment.index.inverted import InvertedIndexReader, SortedIndexReader

        if "inverted" in self.metadata.indexes:
            return InvertedIndexReader(self._prefix)
        if self._sorted_starts is not None:
            return SortedIndexReader(self._sorted_starts)
        return None

    @functools.cached_property
    def range_index(self):
        """``.doc_ids(lo, hi, lo_inclusive, hi_inclusive)`` -> BitMap, None if not built."""
        from engine.segment.index.range_index import RangeIndexReader

        if "range" not in self.metadata.indexes:
            return None
        return RangeIndexReader(self._prefix, self.dictionary, self._sorted_starts, self.total_docs)

    @functools.cached_property
    def bloom_filter(self):
        """``.might_contain(value)`` -> bool, None if not built."""
        from engine.segment.index.bloom import BloomFilterReader

        if "bloom" not in self.metadata.indexes:
            return None
        return BloomFilterReader(self._prefix, self.metadata.data_type)

    def __repr__(self) -> str:
        return f"ColumnReader({self.name!r}, {self.metadata.data_type}, docs={self.total_docs})"
