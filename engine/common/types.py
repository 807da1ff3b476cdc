"""Pinot's column data types and how each is stored.

Every type has a *stored* representation: BOOLEAN is stored as INT 0/1 and TIMESTAMP as LONG
epoch milliseconds (as Pinot does); BIG_DECIMAL as Arrow decimal128(38, 18); STRING and JSON as
UTF-8 strings; BYTES as binary.
"""

from __future__ import annotations

import decimal
import enum
import math

import numpy as np
import pyarrow as pa

# BIG_DECIMAL: 20 integer digits, 18 fractional digits. Pinot's BigDecimal is unbounded; inputs
# outside this range are rejected at ingestion with the row position.
BIG_DECIMAL_ARROW = pa.decimal128(38, 18)

INT_MIN = -(2**31)
LONG_MIN = -(2**63)


class FieldType(enum.StrEnum):
    DIMENSION = "DIMENSION"
    METRIC = "METRIC"
    DATE_TIME = "DATE_TIME"
    TIME = "TIME"


class DataType(enum.StrEnum):
    INT = "INT"
    LONG = "LONG"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    BIG_DECIMAL = "BIG_DECIMAL"
    BOOLEAN = "BOOLEAN"
    TIMESTAMP = "TIMESTAMP"
    STRING = "STRING"
    JSON = "JSON"
    BYTES = "BYTES"

    @classmethod
    def parse(cls, name: str) -> DataType:
        """Parse a Pinot type name (case-insensitive). Raises ValueError for unknown names."""
        return cls(str(name).upper())

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type a column of this type has in record batches and on disk."""
        return _ARROW[self]

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """The numpy dtype of stored values, or None for variable-width types."""
        return _NUMPY.get(self)

    @property
    def is_numeric(self) -> bool:
        """True for types whose stored values are numbers (includes BOOLEAN and TIMESTAMP)."""
        return self in _NUMPY or self is DataType.BIG_DECIMAL

    @property
    def is_fixed_width(self) -> bool:
        return self in _NUMPY

    def default_null_value(self, field_type: FieldType) -> object:
        """Pinot's default null value: metrics 0; dimensions (and time columns) the type's
        minimum for INT/LONG, -Infinity for FLOAT/DOUBLE, "null" for STRING/JSON, 0 (false)
        for BOOLEAN/TIMESTAMP, empty bytes for BYTES. Returned in stored form."""
        if field_type is FieldType.METRIC:
            return _METRIC_NULL[self]
        return _DIMENSION_NULL[self]

    def to_stored(self, value: object) -> object:
        """Convert a JSON/Python value (e.g. a defaultNullValue) to the stored form.
        Raises ValueError/TypeError when it does not fit."""
        if value is None:
            raise ValueError("null is not a value")
        if self in (DataType.INT, DataType.LONG):
            if isinstance(value, str):
                value = value.strip()
                out = int(float(value)) if any(c in value for c in ".eE") else int(value)
            else:
                out = int(value)
            lo, hi = (INT_MIN, 2**31 - 1) if self is DataType.INT else (LONG_MIN, 2**63 - 1)
            if not lo <= out <= hi:
                raise ValueError(f"{value!r} is out of range for {self}")
            return out
        if self in (DataType.FLOAT, DataType.DOUBLE):
            return float(value)
        if self is DataType.BOOLEAN:
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("true", "1"):
                    return 1
                if low in ("false", "0"):
                    return 0
                raise ValueError(f"{value!r} is not a boolean")
            return 1 if value else 0
        if self is DataType.TIMESTAMP:
            if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
                return int(np.datetime64(value.strip().replace(" ", "T"), "ms").astype(np.int64))
            return int(value)
        if self is DataType.BIG_DECIMAL:
            return decimal.Decimal(str(value))
        if self is DataType.BYTES:
            if isinstance(value, bytes | bytearray):
                return bytes(value)
            return bytes.fromhex(str(value))  # Pinot writes BYTES defaults as hex strings
        return value if isinstance(value, str) else str(value)

    def to_json_value(self, stored: object) -> object:
        """The stored value as JSON would show it (BYTES as hex, BIG_DECIMAL as string,
        infinities as strings as Pinot's JSON does)."""
        if isinstance(stored, bytes):
            return stored.hex()
        if isinstance(stored, decimal.Decimal):
            return str(stored.normalize()) if stored == stored else str(stored)
        if isinstance(stored, np.generic):
            stored = stored.item()
        if isinstance(stored, float) and math.isinf(stored):
            return "Infinity" if stored > 0 else "-Infinity"
        return stored


_ARROW = {
    DataType.INT: pa.int32(),
    DataType.LONG: pa.int64(),
    DataType.FLOAT: pa.float32(),
    DataType.DOUBLE: pa.float64(),
    DataType.BIG_DECIMAL: BIG_DECIMAL_ARROW,
    DataType.BOOLEAN: pa.int32(),
    DataType.TIMESTAMP: pa.int64(),
    DataType.STRING: pa.string(),
    DataType.JSON: pa.string(),
    DataType.BYTES: pa.binary(),
}
_NUMPY = {
    DataType.INT: np.dtype(np.int32),
    DataType.LONG: np.dtype(np.int64),
    DataType.FLOAT: np.dtype(np.float32),
    DataType.DOUBLE: np.dtype(np.float64),
    DataType.BOOLEAN: np.dtype(np.int32),
    DataType.TIMESTAMP: np.dtype(np.int64),
}
_DIMENSION_NULL = {
    DataType.INT: INT_MIN,
    DataType.LONG: LONG_MIN,
    DataType.FLOAT: float("-inf"),
    DataType.DOUBLE: float("-inf"),
    DataType.BIG_DECIMAL: decimal.Decimal(0),
    DataType.BOOLEAN: 0,
    DataType.TIMESTAMP: 0,
    DataType.STRING: "null",
    DataType.JSON: "null",
    DataType.BYTES: b"",
}
_METRIC_NULL = {
    DataType.INT: 0,
    DataType.LONG: 0,
    DataType.FLOAT: 0.0,
    DataType.DOUBLE: 0.0,
    DataType.BIG_DECIMAL: decimal.Decimal(0),
    DataType.BOOLEAN: 0,
    DataType.TIMESTAMP: 0,
    DataType.STRING: "null",
    DataType.JSON: "null",
    DataType.BYTES: b"",
}


def smallest_uint_dtype(max_value: int) -> np.dtype:
    """The narrowest unsigned dtype that holds 0..max_value (inclusive)."""
    if max_value < 2**8:
        return np.dtype(np.uint8)
    if max_value < 2**16:
        return np.dtype(np.uint16)
    if max_value < 2**32:
        return np.dtype(np.uint32)
    return np.dtype(np.uint64)
