"""Primary keys of rows, as the metadata map stores them (Pinot's ``hashFunction``).

``Keys.main`` is an int64 array for a single INT/LONG/TIMESTAMP/BOOLEAN key with ``NONE``
(exact, 8 bytes a key) and for every hashed key (the first 8 bytes of the digest, with the
next 8 in ``low``); raw keys of other types under ``NONE`` are Python values (a tuple for a
composite key) in an object array, exact as Pinot's ``NONE`` is. The digests never leave the
server (snapshots hold bitmaps, not keys), so they need not match Pinot's bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import uuid

import mmh3
import numpy as np
import pyarrow as pa
import xxhash

from engine.common.types import DataType
from engine.ingest.coercion import NULL_COLUMN_PREFIX
from engine.spi.upsert_config import HashFunction

_INTEGER_KEYS = {DataType.INT, DataType.LONG, DataType.TIMESTAMP, DataType.BOOLEAN}


@dataclasses.dataclass
class Keys:
    main: np.ndarray  # int64, or object (raw NONE keys)
    low: np.ndarray | None = None  # int64: the second half of a 128-bit digest

    def __len__(self) -> int:
        return len(self.main)

    def take(self, rows) -> Keys:
        return Keys(self.main[rows], None if self.low is None else self.low[rows])

    def group(self) -> tuple[np.ndarray, np.ndarray]:
        """(group id of each key, position of each group's first key), groups numbered in
        order of first appearance."""
        if self.main.dtype == object:
            ids: dict = {}
            inverse = np.fromiter((ids.setdefault(k, len(ids)) for k in self.main), np.int64,
                                  len(self.main))  # fmt: skip
        else:
            stacked = self.main if self.low is None else _pairs(self.main, self.low)
            _, first, inverse = np.unique(stacked, return_index=True, return_inverse=True)
            # renumber by first appearance, so group ids follow the stream's order
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            inverse = rank[inverse.reshape(-1)]
        first = np.full(int(inverse.max()) + 1 if len(inverse) else 0, -1, dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(inverse) - 1, -1, -1)
        return inverse.astype(np.int64, copy=False), first


def _pairs(main: np.ndarray, low: np.ndarray) -> np.ndarray:
    return np.stack([main, low], axis=1).copy().view(np.dtype((np.void, 16))).reshape(-1)


class KeyReader:
    """Reads the primary keys of a table's rows (``key_columns`` in order) and hashes them."""

    def __init__(self, key_columns: list[str], types: dict[str, DataType],
                 hash_function: HashFunction):  # fmt: skip
        self.columns = list(key_columns)
        self.hash_function = hash_function
        self.integer = (
            hash_function is HashFunction.NONE
            and len(self.columns) == 1
            and types[self.columns[0]] in _INTEGER_KEYS
        )

    def missing(self, table: pa.Table) -> np.ndarray:
        """True for rows with a key column that had no value (needs the ``$null$`` columns
        the consuming path asks for)."""
        out = np.zeros(table.num_rows, dtype=bool)
        for column in self.columns:
            flag = NULL_COLUMN_PREFIX + column
            if flag in table.column_names:
                out |= table.column(flag).to_numpy(zero_copy_only=False)
        return out

    def read(self, table: pa.Table) -> Keys:
        """The keys of every row of ``table`` (a segment's stored columns)."""
        return self.of_values([_numpy(table.column(c)) for c in self.columns])

    def of_values(self, values: list[np.ndarray]) -> Keys:
        if self.integer:
            return Keys(np.asarray(values[0]).astype(np.int64, copy=False))
        rows = values[0].tolist() if len(values) == 1 else list(zip(*(v.tolist() for v in values),
                                                                     strict=True))  # fmt: skip
        if self.hash_function is HashFunction.NONE:
            out = np.empty(len(rows), dtype=object)
            out[:] = rows
            return Keys(out)
        digest = _DIGESTS[self.hash_function]
        raw = b"".join(digest(_key_bytes(row)) for row in rows)
        halves = np.frombuffer(raw, dtype="<i8").reshape(-1, 2) if raw else np.zeros((0, 2), "<i8")
        return Keys(halves[:, 0].copy(), halves[:, 1].copy())


def _numpy(column) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False)


def _key_bytes(value) -> bytes:
    """One key's bytes: each part typed and length-prefixed, so ("a", "bc") != ("ab", "c")."""
    if isinstance(value, tuple):
        return b"".join(_part(v) for v in value)
    return _part(value)


def _part(value) -> bytes:
    if isinstance(value, bytes):
        body, tag = value, b"b"
    elif isinstance(value, str):
        body, tag = value.encode(), b"s"
    elif isinstance(value, bool | int | np.integer):
        body, tag = struct.pack(">q", int(value)), b"i"
    elif isinstance(value, float | np.floating):
        body, tag = struct.pack(">d", float(value)), b"f"
    else:
        body, tag = str(value).encode(), b"o"
    return tag + struct.pack(">I", len(body)) + body


def _uuid(data: bytes) -> bytes:
    """Pinot's UUID hash packs a UUID key into its 16 bytes; other keys are digested (MD5)."""
    if data[:1] == b"s" and len(data) == 41:
        try:
            return uuid.UUID(data[5:].decode()).bytes
        except ValueError:
            pass
    return hashlib.md5(data, usedforsecurity=False).digest()


_DIGESTS = {
    HashFunction.MD5: lambda b: hashlib.md5(b, usedforsecurity=False).digest(),
    HashFunction.MURMUR3: lambda b: mmh3.hash_bytes(b),
    HashFunction.XXHASH: lambda b: xxhash.xxh3_128_digest(b),
    HashFunction.XXH128: lambda b: xxhash.xxh128_digest(b),
    HashFunction.UUID: _uuid,
}
