"""Turns raw input batches into schema-shaped rows: transforms, filter, then coercion.

The order follows Pinot's record transformer chain: ``ingestionConfig.transformConfigs`` (and
schema-level ``transformFunction``) first, then ``filterConfig`` (rows where the filter is true
are dropped), then type coercion with null defaults.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from engine.common.errors import IngestError
from engine.ingest.coercion import coerce_table
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


@dataclasses.dataclass
class PreparedRows:
    """``table`` holds the rows that passed; ``errors`` one IngestError per skipped row (with
    its 0-based input position); ``num_read`` counts every input row, ``num_filtered`` the rows
    the filter dropped. ``positions`` holds each kept row's 0-based input position."""

    table: pa.Table
    errors: list[IngestError]
    num_read: int
    num_filtered: int
    positions: np.ndarray | None = None


def _as_batches(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
) -> Iterable[pa.RecordBatch]:
    if isinstance(data, pa.Table):
        return data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return [data]
    return data


def prepare_rows(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    schema: Schema,
    table_config: TableConfig | None,
    *,
    continue_on_error: bool = False,
    source: str = "input",
    transformer=None,
    track_nulls: frozenset[str] = frozenset(),
) -> PreparedRows:
    """Transform, filter and coerce ``data``. Without ``continue_on_error`` the first row that
    cannot be coerced raises IngestError naming its position; with it, such rows are skipped
    and reported in ``errors``. ``transformer``: a ``RecordTransformer`` of the same schema and
    config to reuse (a consuming segment indexes many small batches; parsing the transform
    expressions for each would cost more than the rows). ``track_nulls``: columns that get a
    ``$null$`` column even without null handling (upsert reads whether a key was given)."""
    from engine.ingest.transforms import RecordTransformer

    transformer = transformer or RecordTransformer(schema, table_config)
    nullable = track_nulls | schema.nullable_columns(
        table_config is not None and table_config.index_config.null_handling_enabled
    )
    tables: list[pa.Table] = []
    kept: list[np.ndarray] = []
    errors: list[IngestError] = []
    num_read = num_filtered = 0
    for batch in _as_batches(data):
        if not isinstance(batch, pa.RecordBatch | pa.Table):
            raise IngestError(
                f"expected Arrow record batches, got {type(batch).__name__}", source=source
            )
        n = batch.num_rows
        positions = np.arange(num_read, num_read + n, dtype=np.int64)
        num_read += n
        if n == 0:
            continue
        shape = functools.partial(_shape, transformer=transformer, schema=schema,
                                  nullable=nullable, source=source)  # fmt: skip
        try:
            part = shape(batch, positions)
        except IngestError:
            raise
        except Exception as exc:  # a bug met on unusual input: see _row_by_row
            if not continue_on_error:
                raise
            part = _row_by_row(shape, batch, positions, exc)
        num_filtered += part.num_filtered
        kept.append(part.positions)
        for row in sorted(part.failed):
            error = IngestError(part.failed[row], row=row, source=source)
            if not continue_on_error:
                raise error
            errors.append(error)
        if part.table is not None:
            tables.append(part.table)
    if tables:
        table = pa.concat_tables(tables)
    else:
        table = coerce_table(
            pa.table({"$": pa.array([], pa.null())}), schema, nullable=nullable
        ).table
    positions = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    return PreparedRows(table, errors, num_read, num_filtered, positions)


@dataclasses.dataclass
class _Shaped:
    table: pa.Table | None  # None: no row of the batch passed
    positions: np.ndarray  # input position of each row of ``table``
    failed: dict[int, str]  # input position -> why the row was skipped
    num_filtered: int


def _shape(batch, positions: np.ndarray, *, transformer, schema: Schema, nullable,
           source: str) -> _Shaped:  # fmt: skip
    """Transform, filter and coerce one batch whose rows are at input ``positions``."""
    try:
        transformed = transformer.transform(batch)
    except IngestError as exc:
        row = None if exc.row is None else int(positions[exc.row])
        raise IngestError(exc.message, row=row, source=source) from exc
    failed = {int(positions[pos]): message for pos, message in transformed.bad_rows.items()}
    if transformed.keep is not None:
        positions = positions[transformed.keep]
    try:
        result = coerce_table(transformed.table, schema, nullable=nullable)
    except IngestError as exc:
        row = None if exc.row is None else int(positions[exc.row])
        raise IngestError(exc.message, row=row, source=source) from exc
    failed |= {int(positions[pos]): message for pos, message in result.bad_rows.items()}
    if result.bad_rows:
        good = np.ones(len(positions), dtype=bool)
        good[list(result.bad_rows)] = False
        positions = positions[good]
    return _Shaped(result.table, positions, failed, transformed.num_filtered)


def _row_by_row(shape, batch, positions: np.ndarray, first: Exception) -> _Shaped:
    """A batch that failed in an unforeseen way (a bug met on unusual input, not a bad value
    the coercion reports): shaped again one row at a time, so the rows that still fail are
    skipped as error rows and the rest are kept. Pinot skips a row that throws; a consuming
    segment must never stop on one."""
    if batch.num_rows == 1:
        why = f"cannot be ingested: {type(first).__name__}: {first}"
        return _Shaped(None, positions[:0], {int(positions[0]): why}, 0)
    parts = []
    for i in range(batch.num_rows):
        try:
            parts.append(shape(batch.slice(i, 1), positions[i : i + 1]))
        except IngestError as exc:
            parts.append(_Shaped(None, positions[:0], {int(positions[i]): exc.message}, 0))
        except Exception as exc:  # this row is reported; the others go on
            parts.append(_row_by_row(shape, batch.slice(i, 1), positions[i : i + 1], exc))
    tables = [p.table for p in parts if p.table is not None and p.table.num_rows]
    return _Shaped(
        pa.concat_tables(tables) if tables else None,
        np.concatenate([p.positions for p in parts]),
        {row: why for p in parts for row, why in p.failed.items()},
        sum(p.num_filtered for p in parts),
    )
