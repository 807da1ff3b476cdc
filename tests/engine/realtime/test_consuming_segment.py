"""A server's consuming segment from ZK metadata to ONLINE, against the session's
Kafka: build when at the committed offset, catch up when behind, download when ahead or
discarded (the controller is scripted)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from engine.clusterstate.records import SegmentZKMetadata
from engine.common.clock import now_ms
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.consuming_segment import ConsumingSegment
from engine.segment import load_segment
from engine.spi import Schema, TableConfig

pytestmark = pytest.mark.integration
SCHEMA = Schema.from_json(
    {"schemaName": "t", "dimensionFieldSpecs": [{"name": "k", "dataType": "STRING"}]}
)


class Answers:
    def __init__(self, status: str):
        self.status = status

    def segment_consumed(self, segment, offset, reason, stats):
        return CompletionResponse(self.status)

    def segment_stopped_consuming(self, segment, offset, reason):
        return CompletionResponse(proto.PROCESSED)


@pytest.fixture(scope="module")
def topic(kafka) -> str:
    name = f"online_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, num_partitions=1)])[name].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    for i in range(100):
        producer.produce(name, orjson.dumps({"k": f"v{i}"}), partition=0)
    assert producer.flush(10) == 0
    return name


def make(kafka, topic, tmp_path, status: str) -> ConsumingSegment:
    config = TableConfig.from_json(
        {
            "tableName": "t",
            "tableType": "REALTIME",
            "tableIndexConfig": {
                "streamConfigs": {
                    "streamType": "kafka",
                    "stream.kafka.topic.name": topic,
                    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
                    "KafkaJSONMessageDecoder",
                    "stream.kafka.broker.list": kafka.bootstrap_servers,
                }
            },
        }
    )
    zk = SegmentZKMetadata(
        "t__0__0__20260801T1200Z", "t_REALTIME", creation_time_ms=now_ms(),
        extra={"segment.realtime.startOffset": "0", "segment.flush.threshold.size": "40"},
    )  # fmt: skip
    consuming = ConsumingSegment(
        config, SCHEMA, zk, instance_id="Server_h_1", completion=Answers(status),
        build_dir=tmp_path / status, hold_ms=20,
    )  # fmt: skip
    consuming.start()
    deadline = time.monotonic() + 20
    while consuming.consumer.state is ConsumerState.INITIAL_CONSUMING:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return consuming


def docs(path: Path) -> list[str]:
    segment = load_segment(path)
    return sorted(segment.column("k").values().tolist())


def test_online_at_the_committed_offset_builds_and_behind_catches_up(kafka, topic, tmp_path):
    def no_download():
        raise AssertionError("should not download")

    at = make(kafka, topic, tmp_path, proto.HOLD)
    assert at.consumer.current_offset == 40
    assert len(docs(at.go_online(40, no_download))) == 40
    behind = make(kafka, topic, tmp_path / "b", proto.HOLD)
    path = behind.go_online(70, no_download)
    assert docs(path) == sorted(f"v{i}" for i in range(70))
    assert behind.consumer.state is ConsumerState.RETAINED


def test_online_downloads_when_ahead_or_discarded(kafka, topic, tmp_path):
    downloaded = tmp_path / "downloaded"
    ahead = make(kafka, topic, tmp_path, proto.HOLD)
    assert ahead.go_online(25, lambda: downloaded) == downloaded
    discarded = make(kafka, topic, tmp_path / "d", proto.DISCARD)
    discarded._thread.join(10)
    assert discarded.consumer.state is ConsumerState.DISCARDED
    assert discarded.go_online(40, lambda: downloaded) == downloaded
