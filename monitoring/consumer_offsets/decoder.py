"""Decodes `__consumer_offsets` records (Kafka's GroupCoordinatorRecordSerde layout).

Key = int16 record type + body; value = int16 version + body; a null value is a tombstone.
Types 0 and 1 are offset commits (`group, topic, partition`), type 2 is group metadata
(`group`); the KIP-848 and share-group types (3 and up) and value versions newer than this
decoder knows are skipped and counted, so a newer broker never stops the stream. Bytes that
break a known schema raise `OffsetsDecodeError` naming the record type and the field.
"""

from __future__ import annotations

import base64
import struct
from collections import Counter
from dataclasses import dataclass, field

from monitoring.consumer_offsets import wire
from monitoring.consumer_offsets.records import (
    GroupDeleted,
    GroupMember,
    GroupMetadata,
    OffsetCommit,
    OffsetDeleted,
    Record,
)
from monitoring.errors import OffsetsDecodeError

OFFSET_COMMIT_KEY_TYPES = (0, 1)
GROUP_METADATA_KEY_TYPE = 2
MAX_OFFSET_COMMIT_VERSION = 4
MAX_GROUP_METADATA_VERSION = 4
FLEXIBLE_FROM = 4  # both value schemas are flexible from version 4
TOPIC_ID_TAG = 0  # OffsetCommitValue v4 tagged field (KAFKA-19141)


@dataclass
class DecodeStats:
    """What a decoder has seen: records decoded by kind, and records skipped by reason."""

    offset_commits: int = 0
    offset_tombstones: int = 0
    group_metadata: int = 0
    group_tombstones: int = 0
    skipped: Counter = field(default_factory=Counter)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


class ConsumerOffsetsDecoder:
    """Stateless apart from its counters in `stats`."""

    def __init__(self) -> None:
        self.stats = DecodeStats()
        self.last_skipped: str | None = None  # why the last record decoded to None

    def _skip(self, reason: str) -> None:
        self.stats.skipped[reason] += 1
        self.last_skipped = reason

    def decode(self, key: bytes, value: bytes | None) -> Record | None:
        """One record; None when it is of a type or version this decoder skips (counted)."""
        self.last_skipped = None
        try:
            record = _fast_offset_commit(key, value)
        except (struct.error, UnicodeDecodeError):
            record = None  # the careful path below names what is broken
        if record is not None:
            self.stats.offset_commits += 1
            return record
        try:
            record_type, pos = wire.int16(key, 0)
        except wire.Truncated:
            raise OffsetsDecodeError(f"key of {len(key)} byte(s) has no record type") from None
        if record_type in OFFSET_COMMIT_KEY_TYPES:
            return self._offset_commit(record_type, key, pos, value)
        if record_type == GROUP_METADATA_KEY_TYPE:
            return self._group_metadata(key, pos, value)
        self._skip(f"key type {record_type}")
        return None

    # -- offset commits -----------------------------------------------------------------------
    def _offset_commit(self, key_type: int, key: bytes, pos: int, value: bytes | None):
        step = "group"
        try:
            group, pos = wire.string(key, pos)
            step = "topic"
            topic, pos = wire.string(key, pos)
            step = "partition"
            partition, _ = wire.int32(key, pos)
        except (wire.Truncated, UnicodeDecodeError):
            raise _error(f"offset commit key (type {key_type})", step, key) from None
        if value is None:
            self.stats.offset_tombstones += 1
            return OffsetDeleted(group, topic, partition)
        try:
            version, _ = wire.int16(value, 0)
        except wire.Truncated:
            raise _error("offset commit value", "version", value) from None
        if not 0 <= version <= MAX_OFFSET_COMMIT_VERSION:
            self._skip(f"offset commit value v{version}")
            return None
        try:
            record = _offset_commit_value(group, topic, partition, version, value)
        except _FieldError as exc:
            raise _error(f"offset commit value v{version}", exc.field, value) from None
        self.stats.offset_commits += 1
        return record

    # -- group metadata -----------------------------------------------------------------------
    def _group_metadata(self, key: bytes, pos: int, value: bytes | None):
        try:
            group, _ = wire.string(key, pos)
        except (wire.Truncated, UnicodeDecodeError):
            raise _error("group metadata key (type 2)", "group", key) from None
        if value is None:
            self.stats.group_tombstones += 1
            return GroupDeleted(group)
        try:
            version, _ = wire.int16(value, 0)
        except wire.Truncated:
            raise _error("group metadata value", "version", value) from None
        if not 0 <= version <= MAX_GROUP_METADATA_VERSION:
            self._skip(f"group metadata value v{version}")
            return None
        try:
            record = _group_metadata_value(group, version, value)
        except _FieldError as exc:
            raise _error(f"group metadata value v{version}", exc.field, value) from None
        self.stats.group_metadata += 1
        return record


_KEY_HEAD = struct.Struct(">hh")
_V3_HEAD = struct.Struct(">hqih")
_V0_HEAD = struct.Struct(">hqh")
_V4_HEAD = struct.Struct(">hqi")


def _fast_offset_commit(key: bytes, value: bytes | None) -> OffsetCommit | None:
    """The common case in one pass: a type 0/1 key with a v0-v4 value. Returns
    None for anything else, or for a null string, so the careful path handles it; a short
    buffer raises struct.error."""
    if value is None:
        return None
    key_type, length = _KEY_HEAD.unpack_from(key, 0)
    if key_type > 1 or key_type < 0 or length < 0:
        return None
    end = 4 + length
    group = key[4:end].decode()
    (length,) = wire.INT16.unpack_from(key, end)
    if length < 0:
        return None
    start, end = end + 2, end + 2 + length
    topic = key[start:end].decode()
    (partition,) = wire.INT32.unpack_from(key, end)
    version = wire.INT16.unpack_from(value, 0)[0]
    if version == 4:
        # Flexible: a one-byte compact length (metadata < 127 bytes) and no tagged fields
        # (a lone 0, or nothing) take this path; anything else the careful one.
        _, offset, epoch = _V4_HEAD.unpack_from(value, 0)
        length = value[14] - 1
        end = 15 + length
        if length < 0 or value[14] >= 0x80 or len(value) > end + 9:
            return None
        metadata = value[15:end].decode()
        (commit_ts,) = wire.INT64.unpack_from(value, end)
        if len(value) == end + 9 and value[end + 8] != 0:
            return None
        return OffsetCommit(group, topic, partition, 4, offset, metadata, commit_ts, None, epoch)
    if version == 3:
        _, offset, epoch, length = _V3_HEAD.unpack_from(value, 0)
        start = 16
    elif 0 <= version <= 2:
        _, offset, length = _V0_HEAD.unpack_from(value, 0)
        epoch, start = None, 12
    else:
        return None
    if length < 0:
        return None
    end = start + length
    metadata = value[start:end].decode()
    (commit_ts,) = wire.INT64.unpack_from(value, end)
    expire = wire.INT64.unpack_from(value, end + 8)[0] if version == 1 else None
    return OffsetCommit(
        group, topic, partition, version, offset, metadata, commit_ts, expire, epoch
    )


class _FieldError(Exception):
    def __init__(self, field_name: str) -> None:
        self.field = field_name


def _error(what: str, field_name: str, raw: bytes) -> OffsetsDecodeError:
    return OffsetsDecodeError(f"{what}: cannot read field '{field_name}' from {raw.hex()}")


def _offset_commit_value(group, topic, partition, version, buf) -> OffsetCommit:
    flexible = version >= FLEXIBLE_FROM
    read_string = wire.compact_string if flexible else wire.string
    pos, name = 2, "offset"
    try:
        offset, pos = wire.int64(buf, pos)
        leader_epoch = expire = topic_id = None
        if version >= 3:
            name = "leaderEpoch"
            leader_epoch, pos = wire.int32(buf, pos)
        name = "metadata"
        metadata, pos = read_string(buf, pos)
        name = "commitTimestamp"
        commit_ts, pos = wire.int64(buf, pos)
        if version == 1:
            name = "expireTimestamp"
            expire, pos = wire.int64(buf, pos)
        # Some writers (Burrow's v4 test vector) end a flexible value without its tagged-field
        # section; all the schema's fields are read by then, so it is accepted as "no tags".
        if flexible and pos < len(buf):
            name = "tagged fields"
            tags, pos = wire.tagged_fields(buf, pos)
            if TOPIC_ID_TAG in tags:
                topic_id = _uuid(tags[TOPIC_ID_TAG])
    except (wire.Truncated, UnicodeDecodeError):
        raise _FieldError(name) from None
    return OffsetCommit(
        group,
        topic,
        partition,
        version,
        offset,
        metadata,
        commit_ts,
        expire,
        leader_epoch,
        topic_id,
    )


def _uuid(raw: bytes) -> str:
    """Kafka prints a Uuid as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _group_metadata_value(group: str, version: int, buf: bytes) -> GroupMetadata:
    flexible = version >= FLEXIBLE_FROM
    read_string = wire.compact_string if flexible else wire.string
    read_bytes = wire.compact_bytes if flexible else wire.bytes_
    read_count = wire.compact_array_count if flexible else wire.array_count
    pos, name = 2, "protocolType"
    try:
        protocol_type, pos = read_string(buf, pos)
        name = "generation"
        generation, pos = wire.int32(buf, pos)
        name = "protocol"
        protocol, pos = read_string(buf, pos)
        name = "leader"
        leader, pos = read_string(buf, pos)
        state_ts = None
        if version >= 2:
            name = "currentStateTimestamp"
            state_ts, pos = wire.int64(buf, pos)
        name = "members"
        count, pos = read_count(buf, pos)
        members = []
        for index in range(count):
            name = f"members[{index}]"
            member_id, pos = read_string(buf, pos)
            instance_id = rebalance = None
            if version >= 3:
                instance_id, pos = read_string(buf, pos)
            client_id, pos = read_string(buf, pos)
            client_host, pos = read_string(buf, pos)
            if version >= 1:
                rebalance, pos = wire.int32(buf, pos)
            session, pos = wire.int32(buf, pos)
            subscription, pos = read_bytes(buf, pos)
            assignment, pos = read_bytes(buf, pos)
            if flexible:
                _, pos = wire.tagged_fields(buf, pos)
            members.append(
                GroupMember(
                    member_id or "",
                    instance_id,
                    client_id or "",
                    client_host or "",
                    rebalance,
                    session,
                    subscription,
                    assignment,
                )
            )
        if flexible and pos < len(buf):
            name = "tagged fields"
            _, pos = wire.tagged_fields(buf, pos)
    except (wire.Truncated, UnicodeDecodeError):
        raise _FieldError(name) from None
    return GroupMetadata(
        group, version, protocol_type or "", generation, protocol, leader, state_ts, tuple(members)
    )
