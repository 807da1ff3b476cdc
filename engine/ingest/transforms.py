"""The record transformer chain that runs before coercion: ingestion transforms, then the
filter. Transforms run in config order, so a later one may read an earlier one's output; as
in Pinot, a transform does not overwrite a value the input already has (it fills nulls)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.errors import ConfigError, IngestError
from engine.ingest.expression import Expression, ExpressionError
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


class RecordTransformer:
    """Applies ``ingestionConfig.transformConfigs`` (and schema-level ``transformFunction``)
    and ``ingestionConfig.filterConfig`` to record batches. Bad expressions raise
    ConfigError naming the config field at construction."""

    def __init__(self, schema: Schema, table_config: TableConfig | None):
        self.transforms: list[tuple[str, Expression]] = []
        self.filter: Expression | None = None
        configured = set()
        if table_config is not None:
            for i, tc in enumerate(table_config.ingestion_config.transform_configs):
                path = f"ingestionConfig.transformConfigs[{i}].transformFunction"
                self.transforms.append((tc.column_name, _parse(tc.transform_function, path)))
                configured.add(tc.column_name)
            if table_config.ingestion_config.filter_function:
                self.filter = _parse(
                    table_config.ingestion_config.filter_function,
                    "ingestionConfig.filterConfig.filterFunction",
                )
        for i, spec in enumerate(schema.fields):
            if spec.transform_function and spec.name not in configured:
                self.transforms.append(
                    (
                        spec.name,
                        _parse(
                            spec.transform_function, f"{spec.name}.transformFunction (field {i})"
                        ),
                    )
                )

    def transform(self, batch: pa.RecordBatch | pa.Table) -> TransformResult:
        """Apply the transforms, then the filter. Rows whose transform or filter fails are
        removed and reported by position in ``batch``; rows the filter matches are dropped."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        n = table.num_rows
        if not self.transforms and self.filter is None:
            return TransformResult(table, None, {}, 0)
        rows = np.arange(n)  # position in ``batch`` of each row still in ``table``
        bad: dict[int, str] = {}
        for dest, expr in self.transforms:
            value, table, rows = self._evaluate(
                expr, table, rows, bad, f"transform of column {dest!r}"
            )
            if dest in table.column_names:
                existing = table.column(dest).combine_chunks()
                if existing.null_count == 0:
                    continue
                if existing.type != value.type and existing.type != pa.null():
                    try:
                        value = pc.cast(value, existing.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                        existing = pc.cast(existing, value.type)
                value = pc.coalesce(existing, value) if existing.type != pa.null() else value
                table = table.set_column(table.column_names.index(dest), dest, value)
            else:
                table = table.append_column(dest, value)
        num_filtered = 0
        if self.filter is not None:
            drop, table, rows = self._evaluate(self.filter, table, rows, bad, "filter")
            # Pinot drops the rows for which the filter is true; null counts as false.
            keep_rows = ~np.asarray(
                pc.fill_null(pc.cast(drop, pa.bool_()), False).to_numpy(zero_copy_only=False),
                dtype=bool,
            )
            num_filtered = int(len(keep_rows) - keep_rows.sum())
            table, rows = table.filter(pa.array(keep_rows)), rows[keep_rows]
        keep = np.zeros(n, dtype=bool)
        keep[rows] = True
        return TransformResult(table, keep, bad, num_filtered)

    @staticmethod
    def _evaluate(
        expr: Expression, table: pa.Table, rows: np.ndarray, bad: dict[int, str], what: str
    ):
        """Evaluate over ``table``; rows on which it fails are found by bisection, recorded in
        ``bad`` and removed. Returns (values, table, rows) for the remaining rows."""
        try:
            return _combined(expr.evaluate(_columns(table), table.num_rows)), table, rows
        except _EVAL_ERRORS:
            pass
        failing: dict[int, str] = {}
        try:
            _find_failing(expr, table, 0, failing)
        except _TooManyFailures:
            first = min(failing)
            raise IngestError(
                f"{what} ({expr.text}) fails on most rows, e.g.: {failing[first]}",
                row=int(rows[first]),
            ) from None
        for pos, message in failing.items():
            bad[int(rows[pos])] = f"{what} ({expr.text}) failed: {message}"
        mask = np.ones(table.num_rows, dtype=bool)
        mask[list(failing)] = False
        table, rows = table.filter(pa.array(mask)), rows[mask]
        return _combined(expr.evaluate(_columns(table), table.num_rows)), table, rows


_EVAL_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowNotImplementedError,
    pa.ArrowTypeError,
    ValueError,
    TypeError,
    ArithmeticError,
)


@dataclasses.dataclass
class TransformResult:
    """``table``: the transformed rows that remain; ``keep``: per input row, whether it is in
    ``table`` (None = all are); ``bad_rows``: input position -> why its transform failed;
    ``num_filtered``: rows dropped by the filter."""

    table: pa.Table
    keep: np.ndarray | None
    bad_rows: dict[int, str]
    num_filtered: int


def _columns(table: pa.Table):
    n = table.num_rows

    def column(name: str) -> pa.Array:
        if name in table.column_names:
            return table.column(name).combine_chunks()
        return pa.nulls(n)

    return column


def _combined(value):
    return value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value


class _TooManyFailures(Exception):
    pass


MAX_FAILING_ROWS = 1000  # beyond this the expression, not the data, is almost surely wrong


def _find_failing(expr: Expression, table: pa.Table, offset: int, out: dict[int, str]) -> None:
    try:
        expr.evaluate(_columns(table), table.num_rows)
        return
    except _EVAL_ERRORS as exc:
        if table.num_rows == 1:
            out[offset] = str(exc)
            if len(out) > MAX_FAILING_ROWS:
                raise _TooManyFailures from None
            return
    mid = table.num_rows // 2
    _find_failing(expr, table.slice(0, mid), offset, out)
    _find_failing(expr, table.slice(mid), offset + mid, out)


def _parse(text: str, field: str) -> Expression:
    try:
        return Expression(text)
    except ExpressionError as exc:
        raise ConfigError(field, str(exc)) from exc
