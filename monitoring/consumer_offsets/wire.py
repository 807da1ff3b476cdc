"""Kafka's message-schema primitives, read from a buffer at a position.

Every reader takes `(buf, pos)` and returns `(value, next_pos)`; plain functions over
precompiled structs keep the hot path (one offset commit per record) fast. A short buffer
raises `Truncated`, which the decoder turns into an error naming the record and field.

Encodings: non-flexible versions use int16-length strings (-1 = null), int32-length bytes and
int32 array counts; flexible versions use unsigned-varint lengths stored as n+1 (0 = null) and
end every struct with a tagged-field section (count, then tag, size, data each).
"""

from __future__ import annotations

import struct

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")


class Truncated(Exception):
    """The buffer ended before the field did (or a length was negative where it cannot be)."""


def int16(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 2 > len(buf):
        raise Truncated
    return INT16.unpack_from(buf, pos)[0], pos + 2


def int32(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise Truncated
    return INT32.unpack_from(buf, pos)[0], pos + 4


def int64(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 8 > len(buf):
        raise Truncated
    return INT64.unpack_from(buf, pos)[0], pos + 8


def uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise Truncated
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _slice(buf: bytes, pos: int, length: int) -> tuple[bytes, int]:
    end = pos + length
    if length < 0 or end > len(buf):
        raise Truncated
    return buf[pos:end], end


def string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """int16 length + UTF-8; length -1 is null."""
    length, pos = int16(buf, pos)
    if length == -1:
        return None, pos
    raw, pos = _slice(buf, pos, length)
    return raw.decode("utf-8"), pos


def compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """uvarint length+1 + UTF-8; 0 is null."""
    length, pos = uvarint(buf, pos)
    if length == 0:
        return None, pos
    raw, pos = _slice(buf, pos, length - 1)
    return raw.decode("utf-8"), pos


def bytes_(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """int32 length + bytes; length -1 is null."""
    length, pos = int32(buf, pos)
    if length == -1:
        return None, pos
    return _slice(buf, pos, length)


def compact_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = uvarint(buf, pos)
    if length == 0:
        return None, pos
    return _slice(buf, pos, length - 1)


def array_count(buf: bytes, pos: int) -> tuple[int, int]:
    """int32 element count; -1 (null) reads as 0 elements."""
    count, pos = int32(buf, pos)
    return max(count, 0), pos


def compact_array_count(buf: bytes, pos: int) -> tuple[int, int]:
    count, pos = uvarint(buf, pos)
    return max(count - 1, 0), pos


def tagged_fields(buf: bytes, pos: int) -> tuple[dict[int, bytes], int]:
    """A flexible struct's tagged-field section, as {tag: raw bytes}."""
    count, pos = uvarint(buf, pos)
    fields = {}
    for _ in range(count):
        tag, pos = uvarint(buf, pos)
        size, pos = uvarint(buf, pos)
        fields[tag], pos = _slice(buf, pos, size)
    return fields, pos
