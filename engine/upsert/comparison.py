"""Comparison values and delete flags of rows, in a form numpy can order as Java does.

One comparison column gives an int64 array (INT, LONG, TIMESTAMP, BOOLEAN 0/1), a float64 one
(FLOAT, DOUBLE) or an object array of values whose Python order is Java's: strings as their
UTF-16 code units (Java compares ``String`` by UTF-16 unit, Python ``str`` by code point, which
differ above U+FFFF), BYTES as unsigned bytes, BIG_DECIMAL as ``Decimal``. Several comparison
columns give one tuple per row with exactly one non-null value (``None`` elsewhere).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from engine.common.types import DataType
from engine.ingest.coercion import NULL_COLUMN_PREFIX

_INT = {DataType.INT, DataType.LONG, DataType.TIMESTAMP, DataType.BOOLEAN}
_FLOAT = {DataType.FLOAT, DataType.DOUBLE}
MULTI_NULL_ERROR = "Documents must have exactly 1 non-null comparison column value"


def comparison_dtype(columns: list[str], types: dict[str, DataType]):
    if len(columns) == 1 and types[columns[0]] in _INT:
        return np.int64
    if len(columns) == 1 and types[columns[0]] in _FLOAT:
        return np.float64
    return object


def java_ordered(values: np.ndarray, data_type: DataType) -> np.ndarray:
    """``values`` (stored form) as an array that sorts as Java compares them."""
    if data_type in _INT:
        return values.astype(np.int64, copy=False)
    if data_type in _FLOAT:
        return values.astype(np.float64, copy=False)
    out = np.empty(len(values), dtype=object)
    if data_type in (DataType.STRING, DataType.JSON):
        out[:] = [v.encode("utf-16-be") if isinstance(v, str) else v for v in values.tolist()]
    else:
        out[:] = values.tolist()
    return out


class ComparisonReader:
    def __init__(self, columns: list[str], types: dict[str, DataType]):
        self.columns = list(columns)
        self.types = types
        self.dtype = comparison_dtype(self.columns, types)

    @property
    def single(self) -> bool:
        return len(self.columns) == 1

    def read(self, table: pa.Table, nulls: dict[str, np.ndarray] | None = None):
        """(values, bad): ``bad`` marks rows whose comparison value is missing (one column:
        null; several: not exactly one non-null). ``nulls``: column -> null mask, else the
        table's ``$null$`` columns."""
        masks = [_null_mask(table, c, nulls) for c in self.columns]
        values = [java_ordered(_numpy(table.column(c)), self.types[c]) for c in self.columns]
        if self.single:
            return values[0], masks[0]
        present = np.stack([~m for m in masks], axis=1) if masks else np.zeros((0, 0), bool)
        bad = present.sum(axis=1) != 1
        out = np.empty(table.num_rows, dtype=object)
        lists = [v.tolist() for v in values]
        for row in range(table.num_rows):
            out[row] = tuple(lists[c][row] if present[row, c] else None
                             for c in range(len(self.columns)))  # fmt: skip
        return out, bad


def merged_tuple(new: tuple, stored: tuple | None) -> tuple:
    """Several comparison columns: the stored tuple with the incoming row's one value."""
    if stored is None:
        return new
    return tuple(n if n is not None else s for n, s in zip(new, stored, strict=True))


def incoming_wins(new, stored) -> bool:
    """Whether an incoming row with comparison value ``new`` replaces the stored ``stored``
    (ties: the later record wins). Tuples (several columns): compared on the incoming row's
    one non-null column; a stored null there loses."""
    if isinstance(new, tuple):
        column = next(i for i, v in enumerate(new) if v is not None)
        return stored[column] is None or new[column] >= stored[column]
    return new >= stored


def stored_order_key(value):
    """Stored-vs-stored order (segment load and commit): left to right, null lowest."""
    if isinstance(value, tuple):
        return tuple((v is not None, v if v is not None else 0) for v in value)
    return value


def delete_flags(table: pa.Table, column: str | None, data_type: DataType | None) -> np.ndarray:
    """Pinot's delete rule: Boolean true, the string "true" (any case) or "1", a number == 1."""
    if column is None:
        return np.zeros(table.num_rows, dtype=bool)
    values = _numpy(table.column(column))
    if data_type in (DataType.STRING, DataType.JSON):
        flags = np.array([isinstance(v, str) and (v.lower() == "true" or v == "1")
                          for v in values.tolist()], dtype=bool)  # fmt: skip
    else:
        flags = values.astype(np.float64) == 1
    null = NULL_COLUMN_PREFIX + column
    if null in table.column_names:
        flags &= ~_numpy(table.column(null)).astype(bool)
    return flags


def _null_mask(table: pa.Table, column: str, nulls) -> np.ndarray:
    if nulls is not None and column in nulls:
        return nulls[column]
    flag = NULL_COLUMN_PREFIX + column
    if flag in table.column_names:
        return _numpy(table.column(flag)).astype(bool)
    return np.zeros(table.num_rows, dtype=bool)


def _numpy(column) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column.to_numpy(zero_copy_only=False)
