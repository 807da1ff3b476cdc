"""Apply a schema to Arrow data: type coercion, multi-value wrapping and null defaults.

Coercion is vectorised per column. When a column's cast fails, the failing rows are found by
bisection (a cast of each half, recursively), so the cost is O(bad rows * log n) casts rather
than one Python call per row. More than MAX_BAD_VALUES failures in one column of one batch
means the schema does not fit the input, and stops the build instead.
"""

from __future__ import annotations

import dataclasses
import decimal

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.errors import IngestError
from engine.common.types import DataType
from engine.spi.schema import FieldSpec, Schema

_CAST_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowNotImplementedError,
    pa.ArrowTypeError,
    ValueError,
    TypeError,
    OverflowError,
    decimal.InvalidOperation,
)


@dataclasses.dataclass
class CoercionResult:
    """``table`` has one column per schema column, in stored Arrow types, without nulls and
    without the ``bad_rows``; ``bad_rows`` maps input positions (0-based within the given
    data) to a message naming the column and value."""

    table: pa.Table
    bad_rows: dict[int, str]


def stored_arrow_type(spec: FieldSpec) -> pa.DataType:
    """The Arrow type of a column in a coerced table (list<...> for multi-value)."""
    return spec.data_type.arrow_type if spec.single_value else pa.list_(spec.data_type.arrow_type)


def _to_boolean(arr: pa.Array) -> pa.Array:
    if pa.types.is_boolean(arr.type):
        return pc.cast(arr, pa.int32())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
        is_true = pc.is_in(low, pa.array(["true", "1"]))
        is_false = pc.is_in(low, pa.array(["false", "0"]))
        bad = pc.and_(pc.invert(pc.or_(is_true, is_false)), pc.is_valid(low))
        if pc.any(bad).as_py():
            raise ValueError("not a boolean")
        return pc.if_else(
            pc.is_null(low), pa.scalar(None, pa.int32()), pc.cast(is_true, pa.int32())
        )
    return pc.cast(pc.not_equal(arr, pc.cast(pa.scalar(0), arr.type)), pa.int32())


def _to_timestamp(arr: pa.Array) -> pa.Array:
    if pa.types.is_timestamp(arr.type):
        return pc.cast(pc.cast(arr, pa.timestamp("ms", tz=arr.type.tz)), pa.int64())
    if pa.types.is_date(arr.type):
        return pc.cast(pc.cast(arr, pa.timestamp("ms")), pa.int64())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        # Epoch millis as digits, or ISO-8601 text; a column may mix both.
        arr = pc.utf8_trim_whitespace(arr)
        is_number = pc.fill_null(pc.match_substring_regex(arr, r"^-?\d+$"), False)
        nothing = pa.scalar(None, arr.type)
        numbers = pc.cast(pc.if_else(is_number, arr, nothing), pa.int64())
        dates = pc.cast(
            pc.cast(pc.if_else(is_number, nothing, arr), pa.timestamp("ms")), pa.int64()
        )
        return pc.if_else(is_number, numbers, dates)
    return pc.cast(arr, pa.int64(), safe=False)


def _to_big_decimal(arr: pa.Array) -> pa.Array:
    if pa.types.is_floating(arr.type):
        arr = pc.cast(arr, pa.string())  # via text, so 0.1 stays 0.1
    return pc.cast(arr, DataType.BIG_DECIMAL.arrow_type)


def _to_json_text(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return pc.cast(arr, pa.string())
    # Nested values (structs, lists, maps) become JSON text, as Pinot's JSON columns hold.
    return pa.array(
        [None if v is None else orjson.dumps(v, default=str).decode() for v in arr.to_pylist()],
        pa.string(),
    )


def _to_bytes(arr: pa.Array) -> pa.Array:
    if (
        pa.types.is_binary(arr.type)
        or pa.types.is_large_binary(arr.type)
        or pa.types.is_fixed_size_binary(arr.type)
    ):
        return pc.cast(arr, pa.binary())
    # Pinot reads BYTES given as text as hex.
    return _hex_decode(pc.cast(arr, pa.string()))


_HEX = np.full(256, 255, dtype=np.uint8)
_HEX[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


def _hex_decode(text: pa.Array) -> pa.Array:
    """Hex strings to binary, vectorised over the string buffer; raises on bad hex."""
    valid = text.is_valid()
    # Null slots may still hold bytes in the buffer; fill_null rewrites them as empty.
    text = pc.fill_null(text, "")
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[
        text.offset : text.offset + len(text) + 1
    ]
    data_buffer = text.buffers()[2]
    chars = (
        np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if len(text) and data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    if np.any(np.diff(offsets) % 2):
        raise ValueError("hex text has an odd number of digits")
    nibbles = _HEX[chars]
    if np.any(nibbles == 255):
        raise ValueError("not hex text")
    data = (nibbles[0::2] << 4) | nibbles[1::2]
    new_offsets = ((offsets - offsets[0]) // 2).astype(np.int32)
    decoded = pa.Array.from_buffers(
        pa.binary(), len(text), [None, pa.py_buffer(new_offsets), pa.py_buffer(data.tobytes())]
    )
    return pc.if_else(valid, decoded, pa.scalar(None, pa.binary()))


def convert(arr: pa.Array, data_type: DataType) -> pa.Array:
    """Cast ``arr`` to ``data_type``'s stored Arrow type; raises on any value that does not fit.
    Floats cast to INT/LONG are truncated toward zero, as Pinot does."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):  # a field no record of the batch has a value for
        return pa.nulls(len(arr), data_type.arrow_type)
    if data_type is DataType.BOOLEAN:
        return _to_boolean(arr)
    if data_type is DataType.TIMESTAMP:
        return _to_timestamp(arr)
    if data_type is DataType.BIG_DECIMAL:
        return _to_big_decimal(arr)
    if data_type is DataType.JSON or (
        data_type is DataType.STRING and pa.types.is_nested(arr.type)
    ):
        return _to_json_text(arr)  # nested values in a STRING column become JSON text too
    if data_type is DataType.BYTES:
        return _to_bytes(arr)
    target = data_type.arrow_type
    if data_type in (DataType.INT, DataType.LONG) and pa.types.is_floating(arr.type):
        finite = pc.is_finite(arr)
        if not pc.all(pc.or_(finite, pc.is_null(arr)), min_count=0).as_py():  # empty: ok
            raise ValueError("not a finite number")
        lo, hi = (-(2**31), 2**31 - 1) if data_type is DataType.INT else (-(2**63), 2**63 - 1)
        if pc.any(pc.or_(pc.less(arr, float(lo)), pc.greater(arr, float(hi)))).as_py():
            raise ValueError("out of range")
        return pc.cast(pc.trunc(arr), target, safe=False)
    if pa.types.is_timestamp(arr.type) and data_type in (DataType.INT, DataType.LONG):
        return pc.cast(pc.cast(arr, pa.timestamp("ms", tz=arr.type.tz)), target)
    if (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) and data_type in (
        DataType.INT,
        DataType.LONG,
        DataType.FLOAT,
        DataType.DOUBLE,
    ):
        arr = pc.utf8_trim_whitespace(arr)
    return pc.cast(arr, target)


MAX_BAD_VALUES = 1000  # beyond this per column and batch, the schema is wrong, not a few rows


def _bad_positions(
    arr: pa.Array, data_type: DataType, found: list[int] | None = None, offset: int = 0
) -> list[int]:
    """Positions in ``arr`` whose value cannot be converted (bisection over casts). Raises
    _TooManyBadValues past MAX_BAD_VALUES."""
    found = [] if found is None else found
    try:
        convert(arr, data_type)
        return found
    except _CAST_ERRORS:
        if len(arr) == 1:
            found.append(offset)
            if len(found) > MAX_BAD_VALUES:
                raise _TooManyBadValues(found) from None
            return found
    mid = len(arr) // 2
    _bad_positions(arr.slice(0, mid), data_type, found, offset)
    _bad_positions(arr.slice(mid), data_type, found, offset + mid)
    return found


class _TooManyBadValues(Exception):
    def __init__(self, positions: list[int]):
        self.positions = positions


def _convert_reporting(
    arr: pa.Array, spec: FieldSpec, bad: dict[int, str], positions: np.ndarray | None = None
) -> pa.Array:
    """Convert, recording unconvertible rows in ``bad`` (replaced by the null default)."""
    try:
        out = convert(arr, spec.data_type)
    except _CAST_ERRORS:
        try:
            failing = _bad_positions(arr, spec.data_type)
        except _TooManyBadValues as exc:
            first = exc.positions[0]
            raise IngestError(
                f"column {spec.name!r}: more than {MAX_BAD_VALUES} values in a batch cannot be "
                f"converted to {spec.data_type}, e.g. {arr[first].as_py()!r}",
                row=int(positions[first]) if positions is not None else first,
            ) from None
        for pos in failing:
            row = int(positions[pos]) if positions is not None else pos
            bad.setdefault(
                row,
                f"column {spec.name!r}: cannot convert {arr[pos].as_py()!r} to {spec.data_type}",
            )
        mask = np.ones(len(arr), dtype=bool)
        mask[failing] = False
        keep = pa.array(mask)
        out = convert(pc.if_else(keep, arr, pa.scalar(None, arr.type)), spec.data_type)
    return out


def _fill(arr: pa.Array, spec: FieldSpec) -> pa.Array:
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(spec.default_null_value, arr.type))
    if spec.data_type is DataType.STRING and len(arr):
        # Pinot truncates STRING values longer than the field's maxLength (512 by default).
        longest = pc.max(pc.utf8_length(arr)).as_py()
        if longest is not None and longest > spec.max_length:
            arr = pc.utf8_slice_codeunits(arr, 0, spec.max_length)
    return arr


def coerce_column(
    arr: pa.Array | None, spec: FieldSpec, num_rows: int, bad: dict[int, str]
) -> pa.Array:
    """One column of input as the schema's stored type, nulls replaced by the default."""
    target = spec.data_type.arrow_type
    default = pa.scalar(spec.default_null_value, target)
    if arr is None:
        values = pa.array([default.as_py()], target).take(pa.array(np.zeros(num_rows, np.int64)))
        if spec.single_value:
            return values
        return pa.ListArray.from_arrays(pa.array(np.arange(num_rows + 1, dtype=np.int32)), values)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if spec.single_value:
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            # A one-element list for a single-value column is unwrapped; longer lists are bad.
            lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy()
            for pos in np.flatnonzero(lengths > 1):
                bad.setdefault(int(pos), f"column {spec.name!r}: a list for a single-value column")
            arr = pc.list_element(
                pc.if_else(pa.array(lengths == 1), arr, pa.scalar(None, arr.type)), 0
            )
        return _fill(_convert_reporting(arr, spec, bad), spec)
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        arr = pa.ListArray.from_arrays(pa.array(np.arange(len(arr) + 1, dtype=np.int32)), arr)
    flat = pc.list_flatten(arr)
    parents = pc.list_parent_indices(arr).to_numpy()
    values = _fill(_convert_reporting(flat, spec, bad, parents), spec)
    counts = (
        np.bincount(parents, minlength=len(arr)) if len(parents) else np.zeros(len(arr), np.int64)
    )
    empty = counts == 0
    if empty.any():
        # Null or empty lists become [default], as in Pinot.
        old_offsets = np.concatenate([[0], np.cumsum(counts)])
        new_counts = np.where(empty, 1, counts)
        new_offsets = np.concatenate([[0], np.cumsum(new_counts)])
        source = np.full(int(new_offsets[-1]), len(values), dtype=np.int64)
        positions = new_offsets[parents] + (np.arange(len(parents)) - old_offsets[parents])
        source[positions] = np.arange(len(parents))
        values = pa.concat_arrays([values, pa.array([default.as_py()], target)]).take(
            pa.array(source)
        )
        counts = new_counts
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values)


NULL_COLUMN_PREFIX = "$null$"


def _null_mask(arr: pa.Array | None, spec: FieldSpec, num_rows: int) -> pa.Array:
    """True where the input had no value (null, missing column, or an empty multi-value)."""
    if arr is None:
        return pa.array(np.ones(num_rows, dtype=bool))
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not spec.single_value and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        return pc.equal(pc.fill_null(pc.list_value_length(arr), 0), 0)
    return arr.is_null()


def coerce_table(
    data: pa.Table | pa.RecordBatch, schema: Schema, *, nullable: frozenset[str] = frozenset()
) -> CoercionResult:
    """Coerce ``data`` to ``schema`` (extra input columns are dropped, missing ones get their
    default null value). Rows with any unconvertible value are removed and reported. For each
    column in ``nullable`` a boolean column ``$null$<name>`` marks the rows whose value was
    null (Pinot's null value vector; ``Schema.nullable_columns`` says which)."""
    num_rows = data.num_rows
    names = set(data.schema.names)
    bad: dict[int, str] = {}
    inputs = [data.column(spec.name) if spec.name in names else None for spec in schema.fields]
    columns = [
        coerce_column(arr, spec, num_rows, bad)
        for arr, spec in zip(inputs, schema.fields, strict=True)
    ]
    fields = [
        pa.field(spec.name, stored_arrow_type(spec), nullable=False) for spec in schema.fields
    ]
    for arr, spec in zip(inputs, schema.fields, strict=True):
        if spec.name in nullable:
            columns.append(_null_mask(arr, spec, num_rows))
            fields.append(pa.field(NULL_COLUMN_PREFIX + spec.name, pa.bool_(), nullable=False))
    table = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    if bad:
        keep = np.ones(num_rows, dtype=bool)
        keep[list(bad)] = False
        table = table.filter(pa.array(keep))
    return CoercionResult(table, dict(sorted(bad.items())))
