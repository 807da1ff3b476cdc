"""The decoder over records read back from a real Kafka-protocol broker. The local broker has no
`__consumer_offsets` topic, so the byte vectors are produced into an ordinary topic with the
same key/value framing (a tombstone is a null value) and consumed with assign()."""

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring.consumer_offsets import ConsumerOffsetsDecoder

pytestmark = pytest.mark.integration

h = bytes.fromhex
KEY = h("0001000867726f75702d69640003666f6f00000001")
RECORDS = [
    (KEY, h("0000000000000000006400086d6574616461746100000000000004d2")),
    (KEY, h("000300000000000000640000000a00086d6574616461746100000000000004d2")),
    (KEY, h("000400000000000000640000000a096d6574616461746100000000000004d200")),
    (h("0003000867726f75702d6964"), h("0000")),  # a KIP-848 record: skipped
    (KEY, None),  # tombstone
    (h("0002000867726f75702d6964"), None),
]


def test_records_produced_to_a_topic_decode_to_the_seed_json(kafka):
    topic = f"offsets-bytes-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for key, value in RECORDS:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(10) == 0

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "unused",
                         "fetch.wait.max.ms": 10, "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages = []
    try:
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                messages.append(message)
            if len(messages) == len(RECORDS):
                break
    finally:
        consumer.close()
    assert [(m.key(), m.value()) for m in messages] == RECORDS

    decoder = ConsumerOffsetsDecoder()
    decoded = [decoder.decode(m.key(), m.value()) for m in messages]
    seed = {"topic": "foo", "partition": 1, "group": "group-id", "offset": 100,
            "metadata": "metadata", "commitTimestamp": 1234, "expireTimestamp": None}  # fmt: skip
    assert [r.to_json() if r else None for r in decoded] == [
        {**seed, "version": 0},
        {**seed, "version": 3, "leaderEpoch": 10},
        {**seed, "version": 4, "leaderEpoch": 10},
        None,
        {"topic": "foo", "partition": 1, "group": "group-id", "tombstone": True},
        {"group": "group-id", "groupMetadata": None},
    ]
    stats = decoder.stats
    assert (stats.offset_commits, stats.offset_tombstones, stats.group_tombstones) == (3, 1, 1)
    assert dict(stats.skipped) == {"key type 3": 1}
