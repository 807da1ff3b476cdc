"""A point-in-time, read-only view of a consuming segment, with the reader API of
``engine.segment.ImmutableSegment`` so the query engine runs on it unchanged.

The query engine assumes sorted dictionaries (dictionary id order = value order). A consuming
segment assigns ids in arrival order, so a snapshot maps them through the sorted dictionary's
rank (cached while the cardinality is unchanged); everything else is a view of the first
``total_docs`` rows of the buffers captured when the snapshot was taken.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from engine.common.errors import SegmentError
from engine.common.types import smallest_uint_dtype
from engine.realtime.columns import DictionaryColumn, Postings, RawColumn
from engine.segment.dictionary import Dictionary
from engine.segment.metadata import ColumnMetadata, SegmentMetadata


class _InvertedView:
    """``.bitmap(sorted_id)``: the docs below the snapshot's row count holding that value."""

    def __init__(self, snapshot_column: SnapshotColumn, runs: list, n: int):
        self._snapshot_column, self._runs, self._n = snapshot_column, runs, n

    def bitmap(self, dict_id: int) -> BitMap:
        order = self._snapshot_column._sorted.order  # sorted id -> arrival-order id
        return Postings.docs(self._runs, int(order[dict_id]), self._n)


class MutableColumnMetadata:
    """``ColumnMetadata`` of a snapshot column. Statistics that cost a pass over the data or a
    sort of the dictionary (min, max, values per row) are computed on first use: most queries
    only need the column's type."""

    is_sorted = False
    partition_function = None
    num_partitions = None
    partitions = None
    file_prefix = ""
    forward_dtype = None
    forward_format = "mutable"

    def __init__(self, column: SnapshotColumn):
        spec = column.spec
        self._column = column
        self.name = spec.name
        self.data_type = spec.data_type
        self.field_type = spec.field_type
        self.single_value = spec.single_value
        self.has_dictionary = column._dict_column
        # unknown without a dictionary, as in Pinot's consuming segments
        self.cardinality = column._captured["cardinality"] if column._dict_column else -1
        self.total_number_of_entries = column._captured["entries"]
        self.default_null_value = spec.data_type.to_json_value(spec.default_null_value)
        self.indexes = []
        if "runs" in column._captured:
            self.indexes.append("inverted")
        if "nulls" in column._captured:
            self.indexes.append("nullvec")

    @functools.cached_property
    def _bounds(self) -> tuple[object, object]:
        low, high = self._column.bounds()
        to_json = self.data_type.to_json_value
        return (None if low is None else to_json(low)), (None if high is None else to_json(high))

    @property
    def min_value(self):
        return self._bounds[0]

    @property
    def max_value(self):
        return self._bounds[1]

    @functools.cached_property
    def max_num_multi_values(self) -> int:
        if self.single_value:
            return 1
        counts = np.diff(self._column.mv_offsets())
        return int(counts.max()) if len(counts) else 0

    def to_json(self) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(ColumnMetadata)}
        return ColumnMetadata(**fields).to_json()


class SnapshotColumn:
    """One column of a snapshot; mirrors ``engine.segment.column_reader.ColumnReader``."""

    def __init__(self, snapshot: SegmentSnapshot, column, captured: dict):
        self._snapshot = snapshot
        self._column = column
        self._captured = captured
        self.spec = column.spec
        self.name = column.spec.name
        self.total_docs = snapshot.total_docs
        self._dict_column = isinstance(column, DictionaryColumn)

    # ---- dictionary -------------------------------------------------------------------------
    @functools.cached_property
    def _sorted(self):
        return self._column.sorted_dictionary(self._captured["cardinality"])

    @functools.cached_property
    def dictionary(self) -> Dictionary | None:
        if not self._dict_column:
            return None
        return Dictionary(self.spec.data_type, self._sorted.values)

    @functools.cached_property
    def _rank(self) -> np.ndarray:
        card = self._captured["cardinality"]
        return self._sorted.rank.astype(smallest_uint_dtype(max(card - 1, 0)))

    def _flat_ids(self) -> np.ndarray:
        forward = self._captured["forward"][: self._captured["entries"]]
        return self._rank[forward]

    def dict_ids(self) -> np.ndarray:
        """SV: the sorted-dictionary id of each doc."""
        self._require(single=True, dictionary=True)
        return self._cached_ids

    @functools.cached_property
    def _cached_ids(self) -> np.ndarray:
        return self._flat_ids()

    def dict_ids_range(self, start: int, end: int) -> np.ndarray:
        return self.dict_ids()[start:end]

    def mv_offsets(self) -> np.ndarray:
        self._require(single=False)
        return self._captured["offsets"][: self.total_docs + 1]

    def mv_dict_ids(self) -> np.ndarray:
        self._require(single=False, dictionary=True)
        return self._cached_ids

    def _require(self, *, single: bool, dictionary: bool = False) -> None:
        if self.spec.single_value != single:
            kind = "single-value" if single else "multi-value"
            raise SegmentError(f"this accessor is for {kind} columns; {self.name!r} is not")
        if dictionary and not self._dict_column:
            raise SegmentError(f"column {self.name!r} has no dictionary (it is raw)")

    # ---- values ------------------------------------------------------------------------------
    def _raw_flat(self):
        column: RawColumn = self._column
        return column.flat(self._captured["entries"], self._captured["chunks"])

    def raw_values(self) -> pa.Array:
        flat = self._raw_flat()
        return pa.array(flat) if isinstance(flat, np.ndarray) else flat

    def values(self):
        """SV: one numpy array of values; MV: ``(offsets, flat values)``."""
        if self._dict_column:
            flat = self.dictionary.take(self._cached_ids)
        else:
            raw = self._raw_flat()
            flat = raw if isinstance(raw, np.ndarray) else raw.to_numpy(zero_copy_only=False)
        if self.spec.single_value:
            return flat
        return np.asarray(self.mv_offsets()), flat

    # ---- indexes -----------------------------------------------------------------------------
    @property
    def null_bitmap(self) -> BitMap | None:
        mask = self._captured.get("nulls")
        if mask is None:
            return None
        return BitMap(np.flatnonzero(mask[: self.total_docs]).astype(np.uint32))

    @functools.cached_property
    def inverted_index(self):
        runs = self._captured.get("runs")
        return None if runs is None else _InvertedView(self, runs, self.total_docs)

    range_index = None
    bloom_filter = None

    def sorted_doc_range(self, dict_id: int) -> tuple[int, int]:
        raise SegmentError(f"column {self.name!r} of a consuming segment is not sorted")

    # ---- metadata ----------------------------------------------------------------------------
    @functools.cached_property
    def metadata(self) -> MutableColumnMetadata:
        return MutableColumnMetadata(self)

    def bounds(self) -> tuple[object, object]:
        """(min, max) stored values, (None, None) when empty."""
        if self._dict_column:
            cardinality = self._captured["cardinality"]
            if not cardinality:
                return None, None
            return self.dictionary.get(0), self.dictionary.get(cardinality - 1)
        if not self._captured["entries"]:
            return None, None
        flat = self._raw_flat()
        if isinstance(flat, np.ndarray):
            return flat.min().item(), flat.max().item()
        bounds = pc.min_max(flat)
        return bounds["min"].as_py(), bounds["max"].as_py()

    def to_arrow(self) -> pa.Array:
        """The column in stored Arrow types (MV as a list array), nulls where the input was
        null when null handling is on."""
        arrow_type = self.spec.data_type.arrow_type
        if self._dict_column:
            # arrival-order values taken by the stored ids: the same rows as the sorted
            # dictionary gives, without sorting it (a commit does not need it sorted)
            flat = self._column.arrival_values(self._captured["cardinality"])
            flat = pa.array(flat, type=arrow_type) if isinstance(flat, np.ndarray) else flat
            forward = self._captured["forward"][: self._captured["entries"]]
            flat = flat.take(pa.array(forward))
        else:
            flat = self.raw_values().cast(arrow_type)
        mask = self._captured.get("nulls")
        if not self.spec.single_value:
            offsets = pa.array(np.asarray(self.mv_offsets(), dtype=np.int32))
            # a null multi-value row stays null, so the committed segment keeps its null
            # vector (else it reads as its default, ["null"], after the commit)
            lists = pa.ListArray.from_arrays(offsets, flat)
            if mask is not None and mask[: self.total_docs].any():
                lists = pc.if_else(
                    pa.array(mask[: self.total_docs]), pa.scalar(None, lists.type), lists
                )
            return lists
        if mask is not None and mask[: self.total_docs].any():
            flat = pc.if_else(pa.array(mask[: self.total_docs]), pa.nulls(1, arrow_type)[0], flat)
        return flat


class SegmentSnapshot:
    """The first ``total_docs`` rows of a consuming segment, read-only."""

    star_trees: list = []

    def __init__(self, segment, total_docs: int, captured: dict[str, dict]):
        self._segment = segment
        self.name = segment.name
        self.table_name = segment.table_name
        self.total_docs = total_docs
        self.lock = segment.lock
        # read with the lock held (``capture``): the times of exactly these rows
        self.latest_ingestion_ms = segment.latest_ingestion_ms
        self.last_indexed_ms = segment.last_indexed_ms
        self._columns = {
            name: SnapshotColumn(self, segment.columns[name], captured[name])
            for name in segment.columns
        }
        # columns the schema gained since this segment started consuming, as their default
        # (engine.segment.default_column.adopt_schema)
        self.defaults = None

    @classmethod
    def capture(cls, segment) -> SegmentSnapshot:
        """Called with the segment's lock held: record the row count and the buffers."""
        captured = {}
        for name, column in segment.columns.items():
            entry = {"entries": 0}
            if isinstance(column, DictionaryColumn):
                entry["forward"] = column.forward.data
                entry["entries"] = column.forward.size
                entry["cardinality"] = column.cardinality
                if column.postings is not None:
                    entry["runs"] = column.postings.runs
            else:
                entry["entries"] = (
                    column.values.size if column.fixed else sum(len(c) for c in column.chunks)
                )
                entry["chunks"] = list(column.chunks)
            if column.offsets is not None:
                entry["offsets"] = column.offsets.data
            if name in segment.nulls:
                entry["nulls"] = segment.nulls[name].data
            captured[name] = entry
        return cls(segment, segment.num_docs, captured)

    def freshness_ms(self, now_ms: int) -> int | None:
        """Pinot's consuming freshness of these rows: ``now_ms`` while the consumer has
        nothing new to read, else the stream timestamp of the newest message indexed, else
        the time it was indexed; None before any row."""
        if self._segment.caught_up:
            return now_ms
        if self.latest_ingestion_ms is not None:
            return self.latest_ingestion_ms
        return self.last_indexed_ms

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    def has_column(self, name: str) -> bool:
        return name in self._columns or (
            self.defaults is not None and name in self.defaults.readers
        )

    def column(self, name: str) -> SnapshotColumn:
        reader = self._columns.get(name)
        if reader is None:
            reader = self.defaults.readers.get(name) if self.defaults else None
            if reader is None:
                raise SegmentError(f"segment {self.name} has no column {name!r}")
        return reader

    @functools.cached_property
    def metadata(self) -> SegmentMetadata:
        """Segment-level facts like an immutable segment's (no CRC: it is not written yet)."""
        config = self._segment.table_config
        time_column = config.time_column_name
        start = end = start_ms = end_ms = unit = None
        if time_column and time_column in self._columns and self.total_docs:
            meta = self._columns[time_column].metadata
            start, end = meta.min_value, meta.max_value
            fmt = self._segment.schema.field(time_column).datetime_format
            if fmt is not None and start is not None:
                spec = self._segment.schema.field(time_column)
                bounds = pa.array(
                    [spec.data_type.to_stored(start), spec.data_type.to_stored(end)],
                    spec.data_type.arrow_type,
                )
                start_ms, end_ms = fmt.to_millis(bounds).to_pylist()
                unit = fmt.time_unit
        return SegmentMetadata(
            segment_name=self.name,
            table_name=self.table_name,
            total_docs=self.total_docs,
            crc=-1,
            creation_time=self._segment.creation_time_ms,
            columns={name: c.metadata for name, c in self._columns.items()},
            time_column=time_column,
            time_unit=unit,
            start_time=start,
            end_time=end,
            start_time_ms=start_ms,
            end_time_ms=end_ms,
        )

    def to_arrow(self, columns: list[str] | None = None):
        """The rows as a pyarrow Table in stored types (nulls restored from the null flags,
        so the table can be passed to ``build_segment``)."""
        names = columns or self.column_names
        return pa.table({name: self._columns[name].to_arrow() for name in names})

    def size_bytes(self) -> int:
        return self._segment.memory_bytes

    def close(self) -> None:
        """Nothing to release: the buffers belong to the consuming segment."""

    def __repr__(self) -> str:
        return f"SegmentSnapshot({self.name!r}, docs={self.total_docs})"
