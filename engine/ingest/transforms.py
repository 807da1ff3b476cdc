"""The record transformer chain that runs before coercion: ingestion transforms, then the
filter. Transforms run in config order, so a later one may read an earlier one's output; as
in Pinot, a transform does not overwrite a value the input already has (it fills nulls)."""

from __future__ import annotations

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

    def transform(self, batch: pa.RecordBatch | pa.Table) -> tuple[pa.Table, np.ndarray | None]:
        """The batch with transformed columns, and a keep-mask (None = keep every row)."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if not self.transforms and self.filter is None:
            return table, None
        n = table.num_rows

        def column(name: str):
            if name in table.column_names:
                return table.column(name).combine_chunks()
            return pa.nulls(n)

        for dest, expr in self.transforms:
            try:
                value = expr.evaluate(column, n)
            except (
                pa.ArrowInvalid,
                pa.ArrowNotImplementedError,
                pa.ArrowTypeError,
                ValueError,
                TypeError,
            ) as exc:
                raise IngestError(
                    f"transform of column {dest!r} ({expr.text}) failed: {exc}"
                ) from exc
            if isinstance(value, pa.ChunkedArray):
                value = value.combine_chunks()
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
        keep = None
        if self.filter is not None:
            try:
                drop = self.filter.evaluate(column, n)
            except (
                pa.ArrowInvalid,
                pa.ArrowNotImplementedError,
                pa.ArrowTypeError,
                ValueError,
                TypeError,
            ) as exc:
                raise IngestError(f"filter ({self.filter.text}) failed: {exc}") from exc
            # Pinot drops the rows for which the filter is true; null counts as false.
            keep = ~np.asarray(
                pc.fill_null(pc.cast(drop, pa.bool_()), False).to_numpy(zero_copy_only=False),
                dtype=bool,
            )
            if isinstance(keep, np.ndarray) and keep.ndim == 0:
                keep = np.full(n, bool(keep))
            table = table.filter(pa.array(keep))
        return table, keep


def _parse(text: str, field: str) -> Expression:
    try:
        return Expression(text)
    except ExpressionError as exc:
        raise ConfigError(field, str(exc)) from exc
