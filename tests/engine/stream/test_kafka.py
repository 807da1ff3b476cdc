"""The partition consumer and metadata provider against the session's Apache Kafka."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from engine.common.errors import ConfigError
from engine.stream.config import OffsetCriteria, parse_stream_config
from engine.stream.errors import OffsetOutOfRangeError, PermanentStreamError
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

pytestmark = pytest.mark.integration
JSON_DECODER = "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"
# message i of a topic is stamped T0 + i s (recent: older ones would be due for retention)
T0 = (int(time.time()) - 3600) * 1000


def stream_config(bootstrap: str, topic: str, **extra) -> object:
    return parse_stream_config(
        {
            "streamType": "kafka",
            "stream.kafka.topic.name": topic,
            "stream.kafka.decoder.class.name": JSON_DECODER,
            "stream.kafka.broker.list": bootstrap,
            **extra,
        }
    )


def make_topic(kafka, partitions: int = 2) -> str:
    topic = f"t_{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    return topic


def produce(kafka, topic: str, partition: int, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=partition, timestamp=T0 + i * 1000)
    assert producer.flush(10) == 0


def read_all(consumer: KafkaPartitionConsumer, start: int, end: int) -> list:
    got, offset, deadline = [], start, time.monotonic() + 20
    while offset < end and time.monotonic() < deadline:
        batch = consumer.fetch(offset, end, timeout_ms=200)
        got += list(zip(batch.offsets, batch.values, strict=True))
        offset = batch.next_offset
    return got


def test_partitions_offsets_and_fetch(kafka):
    topic = make_topic(kafka, partitions=2)
    produce(kafka, topic, 0, [b'{"n": %d}' % i for i in range(50)])
    produce(kafka, topic, 1, [b'{"n": 1}', b'{"n": 2}'])
    stream = stream_config(kafka.bootstrap_servers, topic)
    meta = KafkaMetadataProvider(stream)
    assert meta.partition_ids() == [0, 1]
    assert (meta.earliest_offset(0), meta.latest_offset(0)) == (0, 50)
    assert meta.offset_for(0, OffsetCriteria.parse("smallest")) == 0
    assert meta.offset_for(0) == 50  # the stream's default criteria: largest
    assert meta.latest_offset(1) == 2
    # a timestamp criteria: the first message at or after that time (message 20 at T0 + 20 s)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 19_500) / 1000))
    assert meta.offset_for(0, OffsetCriteria.parse(f"{stamp}.500Z")) == 20
    # a period back from now: from the first message newer than that; none is newer than 30
    # minutes, so the latest offset, as in Pinot
    assert meta.offset_for(0, OffsetCriteria.parse("2h")) == 0
    assert meta.offset_for(0, OffsetCriteria.parse("30m")) == 50

    with KafkaPartitionConsumer(stream, 0) as consumer:
        consumer.start(0)
        got = read_all(consumer, 0, 50)
        assert [o for o, _ in got] == list(range(50))
        assert [v for _, v in got] == [b'{"n": %d}' % i for i in range(50)]
        # a bounded re-read from the middle: [10, 13)
        batch = consumer.fetch(10, 13, timeout_ms=2000)
        while not batch.offsets:
            batch = consumer.fetch(10, 13, timeout_ms=2000)
        assert batch.offsets == [10, 11, 12] and batch.next_offset == 13
        assert batch.timestamps_ms == [T0 + 10_000, T0 + 11_000, T0 + 12_000]
        # at the end nothing arrives and the position stays
        empty = consumer.fetch(50, None, timeout_ms=100)
        assert len(empty) == 0 and empty.next_offset == 50

    limited = stream_config(kafka.bootstrap_servers, topic, **{"stream.kafka.partition.ids": "1"})
    assert KafkaMetadataProvider(limited).partition_ids() == [1]


def test_a_long_poll_answers_when_a_message_arrives(kafka):
    """No message waiting: the fetch is held at Kafka, and a message produced meanwhile ends it
    at once (long polling), not after the wait."""
    topic = make_topic(kafka, partitions=1)
    produce(kafka, topic, 0, [b'{"n": 0}'])
    with KafkaPartitionConsumer(stream_config(kafka.bootstrap_servers, topic), 0) as consumer:
        consumer.start(0)
        assert read_all(consumer, 0, 1) == [(0, b'{"n": 0}')]
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        started = time.monotonic()
        producer.produce(topic, b'{"n": 1}', partition=0)
        producer.flush(10)
        batch = consumer.fetch(1, None, timeout_ms=10_000)
        assert batch.offsets == [1] and time.monotonic() - started < 2


def test_records_deleted_past_the_position_are_out_of_range(kafka):
    topic = make_topic(kafka, partitions=1)
    produce(kafka, topic, 0, [b'{"n": %d}' % i for i in range(50)])
    with KafkaPartitionConsumer(stream_config(kafka.bootstrap_servers, topic), 0) as consumer:
        consumer.start(0)
        assert len(read_all(consumer, 0, 10)) == 10  # the position is now 10
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        deleted = admin.delete_records([TopicPartition(topic, 0, 40)])
        assert next(iter(deleted.values())).result(10).low_watermark == 40
        with pytest.raises(OffsetOutOfRangeError) as caught:
            for _ in range(50):
                consumer.fetch(10, None, timeout_ms=200)
        assert (caught.value.offset, caught.value.earliest, caught.value.latest) == (10, 40, 50)
        # the consumer goes on from wherever it is told to
        assert [o for o, _ in read_all(consumer, 40, 50)] == list(range(40, 50))


def test_missing_topic_is_a_permanent_error(kafka):
    stream = stream_config(kafka.bootstrap_servers, f"missing_{uuid.uuid4().hex[:8]}")
    with pytest.raises(PermanentStreamError, match="does not exist"):
        KafkaMetadataProvider(stream).partition_ids(timeout_ms=5000)


def test_client_setting_the_kafka_client_refuses_names_the_key(kafka):
    stream = stream_config(kafka.bootstrap_servers, "x",
                           **{"stream.kafka.consumer.prop.no.such.setting": "1"})  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        KafkaPartitionConsumer(stream, 0)
    assert caught.value.field == "streamConfigs.stream.kafka.consumer.prop.no.such.setting"
