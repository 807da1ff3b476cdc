"""Pinot's segment partition functions (``segmentPartitionConfig.columnPartitionMap``), for
partition pruning: the partition a filter value falls in, computed the way Pinot computes the
partitions recorded in a segment's metadata.

The segment layer's ``engine.segment.partition.partition_of`` is used when it exists, so the
broker and the segment writer can never disagree.
"""

from __future__ import annotations

import importlib

import mmh3

_MASK31 = 0x7FFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c) as a signed 32-bit int; Pinot's ``Murmur``."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = data[4 * n4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _utf16_units(text: str):
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        yield (raw[i] << 8) | raw[i + 1]


def _local_partition(function: str, num_partitions: int, value: object) -> int | None:
    name = function.lower()
    if name == "murmur":
        return (murmur2(_text(value).encode()) & _MASK31) % num_partitions
    if name == "murmur3":
        return (mmh3.hash(_text(value).encode(), 0, signed=True) & _MASK31) % num_partitions
    if name == "modulo":
        return int(float(value)) % num_partitions
    if name == "hashcode":
        return abs(_java_string_hash(_text(value))) % num_partitions
    return None


def partition_of(function: str, num_partitions: int, value: object) -> int | None:
    """The partition of ``value``, or None when the function is unknown or does not apply."""
    try:
        module = importlib.import_module("engine.segment.partition")
        shared = getattr(module, "partition_of", None)
    except ImportError:
        shared = None
    try:
        if shared is not None:
            return int(shared(function, num_partitions, value))
        return _local_partition(function, num_partitions, value)
    except (TypeError, ValueError, KeyError, ZeroDivisionError):
        return None
