"""Encodes `__consumer_offsets` offset commits (key type 1, value v3) for tests and the
benchmark: the layout of the Kafka vectors in shared/KAFKA_OFFSETS.md, checked against them."""

import struct


def _str16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _str16(group) + _str16(topic) + struct.pack(">i", partition)


def commit_value_v3(offset: int, timestamp_ms: int, metadata: str = "", epoch: int = -1) -> bytes:
    return (
        struct.pack(">hqi", 3, offset, epoch) + _str16(metadata) + struct.pack(">q", timestamp_ms)
    )
