"""The `__consumer_offsets` decoder: `ConsumerOffsetsDecoder().decode(key, value)` returns a
record whose `to_json()` is the JSON documented in `records`."""

from monitoring.consumer_offsets.decoder import ConsumerOffsetsDecoder, DecodeStats
from monitoring.consumer_offsets.records import (
    GroupDeleted,
    GroupMember,
    GroupMetadata,
    OffsetCommit,
    OffsetDeleted,
    Record,
)

__all__ = [
    "ConsumerOffsetsDecoder",
    "DecodeStats",
    "GroupDeleted",
    "GroupMember",
    "GroupMetadata",
    "OffsetCommit",
    "OffsetDeleted",
    "Record",
]
