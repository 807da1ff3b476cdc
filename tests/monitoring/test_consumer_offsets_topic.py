"""The decoder over Kafka's own `__consumer_offsets`, as the session's Kafka 4.1 wrote it for
real groups (tests/monitoring/real_groups.py): every record of all 50 partitions decodes or is
skipped by its type; the latest commit of each partition is what the member committed; a
classic group's metadata names its member and assignment; the new protocol's records are
skipped and counted by type; a deleted group leaves tombstones."""

from collections import defaultdict

import pytest

from monitoring.consumer_offsets import (
    ConsumerOffsetsDecoder,
    GroupDeleted,
    GroupMetadata,
    OffsetCommit,
    OffsetDeleted,
)
from tests.monitoring.real_groups import RealGroups, read_offsets_topic

pytestmark = pytest.mark.integration


def test_every_record_kafka_wrote_decodes_or_is_skipped_by_type(kafka):
    groups = RealGroups.start(kafka.bootstrap_servers)
    try:
        messages, partitions = read_offsets_topic(kafka.bootstrap_servers)
        classic_member = groups.members[0].memberid()
    finally:
        groups.close()
    assert partitions == 50
    decoder = ConsumerOffsetsDecoder()
    decoded = [decoder.decode(m.key(), m.value()) for m in messages]  # nothing raises

    latest: dict[str, dict] = defaultdict(dict)
    metadata: dict[str, list[GroupMetadata]] = defaultdict(list)
    for record in decoded:
        if isinstance(record, OffsetCommit):
            assert record.version == 4  # Kafka 4.1 writes offset commit values v4
            latest[record.group][(record.topic, record.partition)] = record.offset
        elif isinstance(record, OffsetDeleted):
            latest[record.group].pop((record.topic, record.partition), None)
        elif isinstance(record, GroupMetadata):
            metadata[record.group].append(record)
    for group in groups.live:
        assert latest[group] == groups.committed[group], group
    assert latest[groups.deleted] == {}  # committed once, then a tombstone
    deleted = [r for r in decoded if getattr(r, "group", None) == groups.deleted]
    assert [type(r) for r in deleted] == [OffsetCommit, OffsetDeleted, GroupDeleted]

    # the classic group's state as it stood with its member joined
    joined = [m for m in metadata[groups.classic] if m.members]
    assert joined, metadata[groups.classic]
    state = joined[-1].to_json()["groupMetadata"]
    assert (state["protocolType"], state["protocol"], state["leader"]) == (
        "consumer", "range", classic_member,
    )  # fmt: skip
    (member,) = state["members"]
    assert member["clientId"] == f"client-{groups.classic}"
    assert member["subscription"]["topics"] == [groups.topic]
    assert member["assignment"]["partitions"] == {groups.topic: [0, 1, 2]}
    assert groups.non_ascii in metadata  # a non-ASCII group id reads back as written

    # the KIP-848 group keeps its membership in record types 3 and up: skipped, counted
    assert groups.kip848 not in metadata
    skipped = decoder.stats.skipped
    assert set(skipped) <= {f"key type {t}" for t in range(3, 16)}
    assert {"key type 3", "key type 5", "key type 6", "key type 7", "key type 8"} <= set(skipped)
