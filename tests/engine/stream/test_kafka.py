"""The partition consumer and metadata provider against the real Kafka-protocol broker."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from engine.common.errors import ConfigError
from engine.stream.config import OffsetCriteria, parse_stream_config
from engine.stream.errors import (
    OffsetOutOfRangeError,
    PermanentStreamError,
    TransientStreamError,
)
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

pytestmark = pytest.mark.integration
JSON_DECODER = "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"


def stream_config(kafka, topic: str, **extra) -> object:
    return parse_stream_config(
        {
            "streamType": "kafka",
            "stream.kafka.topic.name": topic,
            "stream.kafka.decoder.class.name": JSON_DECODER,
            "stream.kafka.broker.list": kafka.bootstrap_servers,
            # Tansu holds every fetch for the full wait; 10 ms keeps the tests fast.
            "stream.kafka.consumer.prop.fetch.wait.max.ms": "10",
            **extra,
        }
    )


def make_topic(kafka, partitions: int = 2) -> str:
    topic = f"t_{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    return topic


def produce(kafka, topic: str, partition: int, values: list[bytes]) -> None:
    """Everything but the last value in one go, then the last in a batch of its own: Tansu's
    high watermark is the base offset of the newest batch + 1."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    for value in values[:-1]:
        producer.produce(topic, value, partition=partition)
    producer.flush(10)
    producer.produce(topic, values[-1], partition=partition)
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
    stream = stream_config(kafka, topic)
    meta = KafkaMetadataProvider(stream)
    assert meta.partition_ids() == [0, 1]
    assert (meta.earliest_offset(0), meta.latest_offset(0)) == (0, 50)
    assert meta.offset_for(0, OffsetCriteria.parse("smallest")) == 0
    assert meta.offset_for(0) == 50  # the stream's default criteria: largest
    assert meta.latest_offset(1) == 2
    # (timestamp criteria are not checked here: Tansu answers time lookups from its storage
    # objects' write times, not the records', see KAFKA_OFFSETS.md section 7)

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
        # at the end nothing arrives and the position stays
        empty = consumer.fetch(50, None, timeout_ms=100)
        assert len(empty) == 0 and empty.next_offset == 50

    limited = stream_config(kafka, topic, **{"stream.kafka.partition.ids": "1"})
    assert KafkaMetadataProvider(limited).partition_ids() == [1]


class _FakeMessage:
    """A librdkafka error event, as the consumer hands it over."""

    def __init__(self, err):
        self._err = err

    def error(self):
        return self._err


class _FakeConsumer:
    def __init__(self, events):
        self.events = list(events)

    def assign(self, partitions):
        pass

    def consume(self, num, timeout):
        events, self.events = self.events, []
        return events

    def poll(self, timeout):
        return None

    def get_watermark_offsets(self, tp, timeout):
        return (500, 900)


def test_kafka_errors_map_to_out_of_range_transient_and_permanent():
    """Unit test (no broker): Tansu never reports out-of-range offsets, so the mapping of
    librdkafka's error events is checked with a stand-in for the client."""
    stream = parse_stream_config(
        {
            "streamType": "kafka",
            "stream.kafka.topic.name": "t",
            "stream.kafka.decoder.class.name": JSON_DECODER,
            "stream.kafka.broker.list": "127.0.0.1:1",
        }
    )
    consumer = KafkaPartitionConsumer(stream, 0)
    consumer._consumer.close()
    consumer._consumer = _FakeConsumer([_FakeMessage(KafkaError(KafkaError._AUTO_OFFSET_RESET))])
    with pytest.raises(OffsetOutOfRangeError) as caught:
        consumer.fetch(10, None, timeout_ms=10)
    assert (caught.value.offset, caught.value.earliest, caught.value.latest) == (10, 500, 900)
    consumer._consumer = _FakeConsumer([_FakeMessage(KafkaError(KafkaError._TRANSPORT))])
    with pytest.raises(TransientStreamError):
        consumer.fetch(10, None, timeout_ms=10)
    consumer._consumer = _FakeConsumer([_FakeMessage(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))])
    with pytest.raises(PermanentStreamError):
        consumer.fetch(10, None, timeout_ms=10)


def test_missing_topic_is_a_permanent_error(kafka):
    meta = KafkaMetadataProvider(stream_config(kafka, f"missing_{uuid.uuid4().hex[:8]}"))
    with pytest.raises(PermanentStreamError, match="does not exist"):
        meta.partition_ids(timeout_ms=5000)


def test_client_setting_the_kafka_client_refuses_names_the_key(kafka):
    stream = stream_config(kafka, "x", **{"stream.kafka.consumer.prop.no.such.setting": "1"})
    with pytest.raises(ConfigError) as caught:
        KafkaPartitionConsumer(stream, 0)
    assert caught.value.field == "streamConfigs.stream.kafka.consumer.prop.no.such.setting"
