"""Pinot's multi-stage types: the Arrow type each Pinot column type travels as between
stages, and the Pinot type name a result column gets back (``columnDataTypes``).

The multi-stage engine keeps operand types (INT stays INT, ``SUM(int)`` is LONG), unlike the
single-stage engine, which answers DOUBLE for most expressions; Arrow types carry that
through the operators, so the response reads its types off the last stage's schema.
"""

from __future__ import annotations

import pyarrow as pa

from engine.common.types import BIG_DECIMAL_ARROW

_ARROW = {
    "INT": pa.int32(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BIG_DECIMAL": BIG_DECIMAL_ARROW,
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("ms"),
    "STRING": pa.string(),
    "JSON": pa.string(),
    "BYTES": pa.binary(),
}

# Pinot type names and the SQL names CAST accepts, as DataFusion spells them
SQL_TYPES = {
    "INT": "INT", "INTEGER": "INT", "SMALLINT": "INT", "TINYINT": "INT",
    "LONG": "BIGINT", "BIGINT": "BIGINT",
    "FLOAT": "REAL", "REAL": "REAL",
    "DOUBLE": "DOUBLE", "DOUBLE PRECISION": "DOUBLE",
    "BIG_DECIMAL": "DECIMAL(38, 18)", "DECIMAL": "DECIMAL(38, 18)", "NUMERIC": "DECIMAL(38, 18)",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "VARCHAR", "VARCHAR": "VARCHAR", "CHAR": "VARCHAR", "TEXT": "VARCHAR",
    "JSON": "VARCHAR",
    "BYTES": "BYTEA", "VARBINARY": "BYTEA", "BINARY": "BYTEA",
}  # fmt: skip


def arrow_type(pinot_type: str, single_value: bool = True) -> pa.DataType:
    """The Arrow type of a Pinot column (a list of it for a multi-value column)."""
    name = pinot_type.upper()
    if name.endswith("_ARRAY"):  # a function's multi-value result, e.g. STRING_ARRAY
        name, single_value = name.removesuffix("_ARRAY"), False
    base = _ARROW.get(name, pa.string())
    return base if single_value else pa.list_(base)


def pinot_type(arrow: pa.DataType) -> str:
    """The Pinot ``columnDataTypes`` name of an Arrow result column."""
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return pinot_type(arrow.value_type) + "_ARRAY"
    if pa.types.is_dictionary(arrow):
        return pinot_type(arrow.value_type)
    if pa.types.is_boolean(arrow):
        return "BOOLEAN"
    if pa.types.is_integer(arrow):
        return "INT" if arrow.bit_width <= 32 else "LONG"
    if pa.types.is_float16(arrow) or pa.types.is_float32(arrow):
        return "FLOAT"
    if pa.types.is_floating(arrow):
        return "DOUBLE"
    if pa.types.is_decimal(arrow):
        return "BIG_DECIMAL"
    if pa.types.is_timestamp(arrow) or pa.types.is_date(arrow):
        return "TIMESTAMP"
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return "BYTES"
    if pa.types.is_binary_view(arrow) or pa.types.is_fixed_size_binary(arrow):
        return "BYTES"
    if pa.types.is_null(arrow):
        return "STRING"
    return "STRING"


def sql_type(name: str) -> str | None:
    """The DataFusion SQL type of a CAST target written as a Pinot or SQL name."""
    return SQL_TYPES.get(" ".join(name.upper().split()))
