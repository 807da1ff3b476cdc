"""The decoded `__consumer_offsets` records and their JSON.

An offset commit's JSON is the seed format, `{"topic","partition","group","version","offset",
"leaderEpoch" (versions that have it),"metadata","commitTimestamp","expireTimestamp"}`;
`expireTimestamp` is null for the versions without one, and `topicId` is added when Kafka 4.1+
wrote it. Tombstones and group metadata get their own shapes, listed on each class.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass


# Not frozen: a frozen dataclass builds through object.__setattr__, which halves the decoder's
# records/s on the hot path.
@dataclass(slots=True)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    version: int
    offset: int
    metadata: str | None
    commit_timestamp: int
    expire_timestamp: int | None = None
    leader_epoch: int | None = None  # versions 3+; -1 means none
    topic_id: str | None = None  # version 4 tagged field 0 (Kafka 4.1+)

    def to_json(self) -> dict:
        record = {
            "topic": self.topic,
            "partition": self.partition,
            "group": self.group,
            "version": self.version,
            "offset": self.offset,
        }
        if self.version >= 3:
            record["leaderEpoch"] = self.leader_epoch
        record["metadata"] = self.metadata
        record["commitTimestamp"] = self.commit_timestamp
        record["expireTimestamp"] = self.expire_timestamp
        if self.topic_id is not None:
            record["topicId"] = self.topic_id
        return record


@dataclass(slots=True, frozen=True)
class OffsetDeleted:
    """A tombstone: the group's commit for the partition was deleted or expired.
    JSON: `{"topic","partition","group","tombstone":true}`."""

    group: str
    topic: str
    partition: int

    def to_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "group": self.group,
            "tombstone": True,
        }


@dataclass(slots=True, frozen=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int | None  # versions 1+
    session_timeout: int
    subscription: bytes | None
    assignment: bytes | None


@dataclass(slots=True, frozen=True)
class GroupMetadata:
    """A classic group's state. JSON: `{"group","groupMetadata":{"version","protocolType",
    "generation","protocol","leader","currentStateTimestamp","members":[…]}}`, where a
    consumer group's subscription and assignment are decoded (`{"version","topics"}`,
    `{"version","partitions":{topic:[partition]}}`) and other protocols' bytes are base64."""

    group: str
    version: int
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None  # versions 2+
    members: tuple[GroupMember, ...]

    def to_json(self) -> dict:
        from monitoring.consumer_offsets.consumer_protocol import assignment_json, subscription_json

        consumer = self.protocol_type == "consumer"
        members = []
        for m in self.members:
            members.append(
                {
                    "memberId": m.member_id,
                    "groupInstanceId": m.group_instance_id,
                    "clientId": m.client_id,
                    "clientHost": m.client_host,
                    "rebalanceTimeout": m.rebalance_timeout,
                    "sessionTimeout": m.session_timeout,
                    "subscription": subscription_json(m.subscription)
                    if consumer
                    else _b64(m.subscription),
                    "assignment": assignment_json(m.assignment) if consumer else _b64(m.assignment),
                }
            )
        return {
            "group": self.group,
            "groupMetadata": {
                "version": self.version,
                "protocolType": self.protocol_type,
                "generation": self.generation,
                "protocol": self.protocol,
                "leader": self.leader,
                "currentStateTimestamp": self.current_state_timestamp,
                "members": members,
            },
        }


@dataclass(slots=True, frozen=True)
class GroupDeleted:
    """A group tombstone: the group was deleted. JSON: `{"group","groupMetadata":null}`."""

    group: str

    def to_json(self) -> dict:
        return {"group": self.group, "groupMetadata": None}


def _b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode("ascii")


Record = OffsetCommit | OffsetDeleted | GroupMetadata | GroupDeleted
