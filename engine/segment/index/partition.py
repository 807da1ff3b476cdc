"""Pinot's segment partition functions, applied to a column's distinct values.

- Murmur: 32-bit murmur2 (Kafka's variant, seed 0x9747b28c) of the value's UTF-8 text,
  ``(hash & 0x7fffffff) % numPartitions``.
- Murmur3: 32-bit x86 murmur3 (mmh3) with seed ``functionConfig.seed`` (default 9001), same
  masking.
- Modulo: ``value % numPartitions`` made non-negative (integers only).
- HashCode: Java ``String.hashCode()`` of the text, ``abs(h) % numPartitions`` (MIN_VALUE -> 0).
- ByteArray: Java ``Arrays.hashCode(bytes)`` of the UTF-8 text, same normalisation.
"""

from __future__ import annotations

import mmh3

from engine.spi.table_config import ColumnPartitionConfig

_MASK32 = 0xFFFFFFFF


def _to_signed32(h: int) -> int:
    h &= _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 as a signed int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> r
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return _to_signed32(h)


def java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, like Java
        h = (31 * h + int(unit, 16)) & _MASK32
    return _to_signed32(h)


def java_bytes_hash(data: bytes) -> int:
    h = 1
    for b in data:
        signed = b - 256 if b > 127 else b
        h = (31 * h + signed) & _MASK32
    return _to_signed32(h)


def _kafka_abs(h: int) -> int:
    return 0 if h == -(2**31) else abs(h)


def value_text(value: object) -> str:
    """The value as Java's toString would print it for the common types."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def partition_of(config: ColumnPartitionConfig, value: object) -> int:
    """The partition id of one value under ``config``."""
    n = config.num_partitions
    name = config.function_name
    if name == "Modulo":
        return int(value) % n  # Python's % is already non-negative for n > 0
    text = value_text(value)
    if name == "Murmur":
        return (murmur2(text.encode()) & 0x7FFFFFFF) % n
    if name == "Murmur3":
        seed = int(config.function_config.get("seed", 9001))
        return (mmh3.hash(text.encode(), seed, signed=True) & 0x7FFFFFFF) % n
    if name == "HashCode":
        return _kafka_abs(java_string_hash(text)) % n
    if name == "ByteArray":
        return _kafka_abs(java_bytes_hash(text.encode())) % n
    raise ValueError(f"unknown partition function {name!r}")


def partitions_of(config: ColumnPartitionConfig, distinct_values) -> list[int]:
    """Sorted distinct partition ids of the given values."""
    return sorted({partition_of(config, v) for v in distinct_values})
