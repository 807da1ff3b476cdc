"""The consumer protocol's member subscription and assignment, the opaque bytes a classic
group with protocolType "consumer" stores per member.

Assignment: `version i16, [topic str, [partition i32]], userData bytes`; subscription:
`version i16, [topic str], userData bytes` (+ownedPartitions v1, generationId v2, rackId v3).
Neither is flexible. Only the leading fields are read, so newer versions decode too. Bytes that
do not parse are returned as base64 rather than failing the whole group record.
"""

from __future__ import annotations

import base64

from monitoring.consumer_offsets import wire


def assignment_json(raw: bytes | None) -> dict | str | None:
    """`{"version", "partitions": {topic: [partition, …]}}`, or base64 if it does not parse."""
    if not raw:
        return None if raw is None else {"version": None, "partitions": {}}
    try:
        version, pos = wire.int16(raw, 0)
        topics, pos = wire.array_count(raw, pos)
        partitions: dict[str, list[int]] = {}
        for _ in range(topics):
            topic, pos = wire.string(raw, pos)
            count, pos = wire.array_count(raw, pos)
            ids = partitions.setdefault(topic or "", [])
            for _ in range(count):
                partition, pos = wire.int32(raw, pos)
                ids.append(partition)
    except (wire.Truncated, UnicodeDecodeError):
        return base64.b64encode(raw).decode("ascii")
    return {"version": version, "partitions": partitions}


def subscription_json(raw: bytes | None) -> dict | str | None:
    """`{"version", "topics": [topic, …]}`, or base64 if it does not parse."""
    if not raw:
        return None if raw is None else {"version": None, "topics": []}
    try:
        version, pos = wire.int16(raw, 0)
        count, pos = wire.array_count(raw, pos)
        topics = []
        for _ in range(count):
            topic, pos = wire.string(raw, pos)
            topics.append(topic)
    except (wire.Truncated, UnicodeDecodeError):
        return base64.b64encode(raw).decode("ascii")
    return {"version": version, "topics": topics}
