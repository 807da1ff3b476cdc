"""Bloom filter over a column's distinct values (Pinot's default false-positive rate 0.05).

Bits are set by double hashing of a 128-bit murmur3 (mmh3) of the value's canonical text, as
Guava's filter does; parameters live in buffer ``<col>.bloom.params`` and the bits in
``<col>.bloom``.
"""

from __future__ import annotations

import decimal
import math

import mmh3
import numpy as np

from engine.common.types import DataType

DEFAULT_FPP = 0.05


def bloom_key(data_type: DataType, value: object) -> bytes | None:
    """Canonical bytes of a value, or None when the value cannot be in a column of this type."""
    try:
        if data_type in (DataType.INT, DataType.LONG, DataType.BOOLEAN, DataType.TIMESTAMP):
            if isinstance(value, float) and not value.is_integer():
                return None
            stored = data_type.to_stored(value)
            return str(int(stored)).encode()
        if data_type is DataType.FLOAT:
            return repr(float(np.float32(value))).encode()
        if data_type is DataType.DOUBLE:
            return repr(float(value)).encode()
        if data_type is DataType.BIG_DECIMAL:
            return str(decimal.Decimal(str(value)).normalize()).encode()
        if data_type is DataType.BYTES:
            return value if isinstance(value, bytes) else bytes.fromhex(str(value))
        return str(value).encode()
    except (ValueError, TypeError, ArithmeticError):
        return None


def _positions(hashes: np.ndarray, num_bits: int, num_hashes: int) -> np.ndarray:
    """Bit positions for each (h1, h2) row of ``hashes``: ``(h1 + i * h2) mod num_bits``."""
    i = np.arange(1, num_hashes + 1, dtype=np.uint64)
    h1, h2 = hashes[:, :1], hashes[:, 1:2]
    return ((h1 + i * h2) % np.uint64(num_bits)).astype(np.int64)  # uint64 arithmetic wraps


def _keys(data_type: DataType, values: list) -> list[bytes]:
    if data_type in (DataType.INT, DataType.LONG, DataType.BOOLEAN, DataType.TIMESTAMP):
        return [str(int(v)).encode() for v in values]  # stored values are already ints
    if data_type in (DataType.STRING, DataType.JSON):
        return [v.encode() for v in values]
    keys = [bloom_key(data_type, v) for v in values]
    return [k for k in keys if k is not None]


def _hash_all(keys: list[bytes]) -> np.ndarray:
    return np.array([mmh3.hash64(k, signed=False) for k in keys], dtype=np.uint64).reshape(-1, 2)


def write_bloom_filter(
    writer,
    prefix: str,
    data_type: DataType,
    distinct_values,
    fpp: float = DEFAULT_FPP,
    max_size_bytes: int | None = None,
) -> None:
    """Write a filter sized for ``distinct_values`` (a list of stored values)."""
    values = list(distinct_values)
    n = max(len(values), 1)
    optimal_bits = math.ceil(-n * math.log(fpp) / (math.log(2) ** 2))
    if max_size_bytes:
        optimal_bits = min(optimal_bits, int(max_size_bytes) * 8)
    # The hash count comes from the optimal size, as Guava's does, not from the 64-bit floor:
    # a filter of a few values padded to 64 bits with k derived from 64 would set nearly every
    # bit and answer "maybe" for most absent values.
    num_hashes = max(1, round(max(optimal_bits, 1) / n * math.log(2)))
    num_bits = max(64, optimal_bits)
    bits = np.zeros(num_bits, dtype=bool)
    keys = _keys(data_type, values)
    if keys:
        bits[_positions(_hash_all(keys), num_bits, num_hashes).ravel()] = True
    writer.put_array(f"{prefix}.bloom", np.packbits(bits))
    writer.put_json(
        f"{prefix}.bloom.params", {"numBits": num_bits, "numHashes": num_hashes, "fpp": fpp}
    )


class BloomFilterReader:
    def __init__(self, store, prefix: str, data_type: DataType):
        params = store.json(f"{prefix}.bloom.params")
        self._num_bits = params["numBits"]
        self._num_hashes = params["numHashes"]
        self._bits = store.array(f"{prefix}.bloom")
        self._type = data_type

    def might_contain(self, value: object) -> bool:
        """False means the segment certainly has no such value; True means it may."""
        key = bloom_key(self._type, value)
        if key is None:
            return False
        pos = _positions(_hash_all([key]), self._num_bits, self._num_hashes).ravel()
        bytes_ = np.asarray(self._bits[pos >> 3])
        return bool(np.all((bytes_ >> (7 - (pos & 7))) & 1))
