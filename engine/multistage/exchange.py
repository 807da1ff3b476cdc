"""Rows between stages: hash partitioning and the Arrow IPC stream format of a mailbox.

Hash partitioning must send equal keys of both sides of a join to the same worker, whatever
their types: an INT key meets a LONG or DOUBLE one after Calcite-style coercion, so numbers
hash by their float64 value and text by its UTF-8 bytes (murmur3, as Pinot's ``murmur``),
NULL keys to partition 0 (they match nothing, and group together).
"""

from __future__ import annotations

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_MIX = np.uint64(0x9E3779B97F4A7C15)


def partition(table: pa.Table, keys: list[str], n: int) -> list[pa.Table]:
    """``table`` split into ``n`` tables by the hash of the ``keys`` columns."""
    if n == 1 or table.num_rows == 0:
        return [table] + [table.slice(0, 0)] * (n - 1)
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for key in keys:
        h = h * np.uint64(31) + _hash_column(table.column(key))
    targets = (h % np.uint64(n)).astype(np.int64)
    order = np.argsort(targets, kind="stable")
    counts = np.bincount(targets, minlength=n)
    ordered = table.take(pa.array(order))
    out, start = [], 0
    for count in counts:
        out.append(ordered.slice(start, int(count)))
        start += int(count)
    return out


def _hash_column(column: pa.ChunkedArray) -> np.ndarray:
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    t = array.type
    if pa.types.is_dictionary(t):
        array = array.cast(t.value_type)
        t = array.type
    valid = None if array.null_count == 0 else pc.is_valid(array).to_numpy(zero_copy_only=False)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or \
            pa.types.is_boolean(t):  # fmt: skip
        values = pc.fill_null(array.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
        values = values + 0.0  # -0.0 and 0.0 hash alike
        bits = values.view(np.uint64)
        h = (bits ^ (bits >> np.uint64(29))) * _MIX
        h ^= h >> np.uint64(32)
    elif pa.types.is_timestamp(t) or pa.types.is_date(t):
        h = pc.fill_null(array.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).view(np.uint64)
        h = h * _MIX
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_struct(t):
        h = np.array([mmh3.hash64(repr(v).encode(), signed=False)[0] for v in array.to_pylist()],
                     dtype=np.uint64)  # fmt: skip
    else:
        encoded = pc.dictionary_encode(array.cast(pa.string()) if not pa.types.is_binary(t)
                                       else array)  # fmt: skip
        dictionary = encoded.dictionary.to_pylist()
        codes = np.array([mmh3.hash64(_bytes(v), signed=False)[0] for v in dictionary],
                         dtype=np.uint64)  # fmt: skip
        indices = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)
        h = codes[indices] if len(codes) else np.zeros(len(array), dtype=np.uint64)
    if valid is not None:
        h = np.where(valid, h, np.uint64(0))
    return h


def _bytes(value) -> bytes:
    if value is None:
        return b""
    return value if isinstance(value, bytes) else str(value).encode()


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def schema_bytes(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def schema_from_bytes(data: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(data))


def chunks(table: pa.Table, max_bytes: int) -> list[pa.Table]:
    """``table`` in slices of about ``max_bytes`` each (at least one, maybe empty)."""
    size = table.nbytes
    if size <= max_bytes or table.num_rows <= 1:
        return [table]
    per = max(1, int(table.num_rows * max_bytes / size))
    return [table.slice(i, per) for i in range(0, table.num_rows, per)]
