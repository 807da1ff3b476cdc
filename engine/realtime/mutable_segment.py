"""The consuming (mutable) segment: rows appended as they are consumed, queryable at once.

Rows arrive as Arrow batches, already decoded. ``index()`` runs them through the same
transform -> filter -> coercion pipeline as a batch build (``engine.ingest.prepare_rows``),
so a row is shaped exactly as it would be in an immutable segment, then appends each column to
its growable storage (``engine.realtime.columns``). Rows that cannot be coerced are skipped and
counted, never stop consumption.

``snapshot()`` gives the query engine an immutable view of the rows indexed so far, with the
reader API of ``ImmutableSegment`` (see ``engine.realtime.snapshot``). ``build()`` turns the
rows into an immutable segment with the engine's segment writer, with every index the table
asks for (sorted, inverted, range, bloom, star-tree).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.common.clock import now_ms
from engine.common.errors import IngestError
from engine.ingest import prepare_rows
from engine.ingest.coercion import NULL_COLUMN_PREFIX
from engine.ingest.transforms import RecordTransformer
from engine.realtime.columns import DictionaryColumn, GrowableArray, RawColumn
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


@dataclasses.dataclass
class IndexResult:
    """What one ``index()`` call did: ``indexed`` rows appended; ``filtered`` rows dropped by
    ``filterConfig``; ``errors`` one IngestError per row that could not be coerced (its
    ``row`` is the position in the batch given)."""

    indexed: int
    filtered: int
    errors: list[IngestError]


class MutableSegment:
    """A consuming segment of one partition. Thread-safe for one writer (the partition's
    consumer) and any number of readers (queries through ``snapshot()``)."""

    def __init__(self, name: str, schema: Schema, table_config: TableConfig):
        self.name = name
        self.schema = schema
        self.table_config = table_config
        self.table_name = table_config.table_name_with_type
        self.creation_time_ms = now_ms()
        # parsed once: a consuming segment indexes many small batches
        self._transformer = RecordTransformer(schema, table_config)
        no_dict = set(table_config.no_dictionary_columns)
        inverted = set(table_config.inverted_index_columns)
        self.columns: dict[str, DictionaryColumn | RawColumn] = {}
        for spec in schema.fields:
            if spec.name in no_dict:
                self.columns[spec.name] = RawColumn(spec)
            else:
                self.columns[spec.name] = DictionaryColumn(spec, spec.name in inverted)
        nullable = schema.nullable_columns(table_config.index_config.null_handling_enabled)
        self.nulls = {name: GrowableArray(np.bool_) for name in self.columns if name in nullable}
        self.num_docs = 0
        self.num_rows_filtered = 0
        self.num_rows_errored = 0
        self.last_indexed_ms: int | None = None
        # the stream timestamp of the newest message indexed, and whether the consumer's last
        # fetch found nothing new (then the rows are as fresh as now): the query freshness
        self.latest_ingestion_ms: int | None = None
        self.caught_up = False
        self._lock = threading.Lock()
        self._snapshot = None
        # an upsert or dedup table's partition metadata (engine.upsert.ConsumingGate): it
        # decides which rows are indexed and updates validity with them, atomically
        self.gate = None

    @property
    def lock(self) -> threading.Lock:
        """Held while rows are appended; readers of live index structures take it too."""
        return self._lock

    def index(self, batch: pa.RecordBatch | pa.Table, *, source: str = "stream",
              ingestion_ms: int | None = None,
              before_publish: Callable[[IndexResult], None] | None = None) -> IndexResult:  # fmt: skip
        """Transform, filter and coerce ``batch`` (decoded messages) and append the rows that
        pass. Never raises for a bad row: it is skipped and returned in ``errors``.
        ``ingestion_ms`` is the stream timestamp of the batch's last message.
        ``before_publish`` is called with the result before the rows become queryable, so a
        caller's counters (bad rows, offsets) are never behind what a query sees."""
        if batch.num_rows == 0:
            result = IndexResult(0, 0, [])
            if before_publish is not None:
                before_publish(result)
            return result
        try:
            prepared = prepare_rows(
                batch, self.schema, self.table_config, continue_on_error=True, source=source,
                transformer=self._transformer,
                track_nulls=self.gate.track_nulls if self.gate is not None else frozenset(),
            )  # fmt: skip
        except IngestError as err:
            # the batch as a whole cannot be shaped (a transform fails on most rows, a column
            # is far off the schema): every row of it is bad, and consumption goes on
            with self._lock:
                self.num_rows_errored += batch.num_rows
            errors = [IngestError(err.message, row=i, source=source) for i in range(batch.num_rows)]
            result = IndexResult(0, 0, errors)
            if before_publish is not None:
                before_publish(result)
            return result
        table = prepared.table.combine_chunks()
        if self.gate is not None:
            return self._index_gated(table, prepared, source, ingestion_ms, before_publish)
        result = IndexResult(table.num_rows, prepared.num_filtered, prepared.errors)
        if before_publish is not None:
            before_publish(result)
        self._append(table, prepared.num_filtered, len(prepared.errors), ingestion_ms)
        return result

    def _index_gated(self, table, prepared, source, ingestion_ms, before_publish) -> IndexResult:
        """Upsert/dedup: the gate decides the rows (bad keys are errors, dedup duplicates and
        dropped out-of-order rows are not indexed) and appends them through ``publish``."""
        outcome = []

        def publish(rows: pa.Table, bad: dict[int, str]) -> int:
            errors = list(prepared.errors) + [
                IngestError(why, row=int(prepared.positions[row]), source=source)
                for row, why in bad.items()
            ]
            outcome.append(IndexResult(rows.num_rows, prepared.num_filtered, errors))
            if before_publish is not None:
                before_publish(outcome[0])
            return self._append(rows, prepared.num_filtered, len(errors), ingestion_ms)

        self.gate.index(table, publish)
        return outcome[0]

    def _append(self, table: pa.Table, filtered: int, errored: int,
                ingestion_ms: int | None) -> int:  # fmt: skip
        """Append coerced rows; returns the doc id of the first."""
        with self._lock:
            first = self.num_docs
            for name, column in self.columns.items():
                column.append(_single_chunk(table.column(name)), first)
            for name, mask in self.nulls.items():
                flags = (
                    table.column(NULL_COLUMN_PREFIX + name)
                    if (NULL_COLUMN_PREFIX + name in table.column_names)
                    else None
                )
                mask.extend(
                    np.zeros(table.num_rows, dtype=np.bool_)
                    if flags is None
                    else _single_chunk(flags).to_numpy(zero_copy_only=False)
                )
            self.num_docs = first + table.num_rows
            self.num_rows_filtered += filtered
            self.num_rows_errored += errored
            if table.num_rows:
                self.last_indexed_ms = now_ms()
                if ingestion_ms is not None and ingestion_ms >= 0:
                    self.latest_ingestion_ms = ingestion_ms
        return first

    @property
    def fields_to_read(self) -> list[str]:
        """The input fields the rows are made from: the schema's columns and every field a
        transform or the filter reads. A decoder can leave the rest of a message out."""
        fields = dict.fromkeys(self.schema.columns)
        for _, expression in self._transformer.transforms:
            fields.update(dict.fromkeys(expression.columns))
        if self._transformer.filter is not None:
            fields.update(dict.fromkeys(self._transformer.filter.columns))
        return list(fields)

    def snapshot(self):
        """An immutable view of the rows indexed so far (the same object until rows are
        added, so the query engine's per-segment caches are reused)."""
        from engine.realtime.snapshot import SegmentSnapshot

        with self._lock:
            current = self._snapshot
            if current is not None and current.total_docs == self.num_docs:
                return current
            self._snapshot = SegmentSnapshot.capture(self)
            return self._snapshot

    def to_arrow(self) -> pa.Table:
        """The rows in stored types (MV as lists), nulls restored where the input was null
        (null handling on): ready for ``build_segment``."""
        return self.snapshot().to_arrow()

    def build(self, out_dir: str | Path, *, segment_name: str | None = None,
              custom_metadata: dict | None = None):  # fmt: skip
        """Write the rows as an immutable segment under ``out_dir`` (engine.segment writer,
        with all of the table's indexes) and return its ``SegmentBuildResult``."""
        from engine.segment import build_segment

        return build_segment(
            self.to_arrow(),
            self.schema,
            self.table_config.without_ingestion_transforms(),
            out_dir,
            segment_name=segment_name or self.name,
            custom_metadata=custom_metadata,
        )

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the column buffers (capacity, not just the rows in use)."""
        return sum(c.nbytes for c in self.columns.values()) + sum(
            m.nbytes for m in self.nulls.values()
        )

    def __repr__(self) -> str:
        return f"MutableSegment({self.name!r}, docs={self.num_docs})"


def _single_chunk(column: pa.ChunkedArray) -> pa.Array:
    if column.num_chunks == 1:
        return column.chunk(0)
    if column.num_chunks == 0:
        return pa.array([], type=column.type)
    return pa.concat_arrays(column.chunks)
