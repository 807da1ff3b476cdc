"""The per-partition consuming loop against the session's Kafka: it stops exactly
at the row target, skips and counts malformed messages, and follows the controller's
completion answers (HOLD, CATCH_UP, KEEP, DISCARD, COMMIT, a refused commit). The controller
is scripted here; its real side is ``cluster.logic.realtime``."""

from __future__ import annotations

import threading
import time
import uuid

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from engine.query.runner import run_query
from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.partition_consumer import PartitionConsumer
from engine.segment import load_segment, unpack_segment
from engine.spi import Schema, TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

pytestmark = pytest.mark.integration
SCHEMA = Schema.from_json(
    {
        "schemaName": "clicks",
        "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG",
                                "format": "1:MILLISECONDS:EPOCH", "granularity": "1:MILLISECONDS"}],
    }
)  # fmt: skip
BAD = {7, 30, 31, 120}  # offsets of malformed messages: bad JSON, a wrong type, not an object


def table_config(kafka, topic: str) -> TableConfig:
    return TableConfig.from_json(
        {
            "tableName": "clicks",
            "tableType": "REALTIME",
            "segmentsConfig": {"timeColumnName": "ts"},
            "tableIndexConfig": {"invertedIndexColumns": ["user"]},
            "ingestionConfig": {
                "streamIngestionConfig": {
                    "streamConfigMaps": [
                        {
                            "streamType": "kafka",
                            "stream.kafka.topic.name": topic,
                            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream."
                            "kafka.KafkaJSONMessageDecoder",
                            "stream.kafka.broker.list": kafka.bootstrap_servers,
                            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
                        }
                    ]
                }
            },
        }
    )


def message(offset: int) -> bytes:
    if offset == 7:
        return b"{not json"
    if offset in (30, 31):
        return orjson.dumps({"user": "u", "n": "many", "ts": 1})
    if offset == 120:
        return b"[1, 2, 3]"
    return orjson.dumps({"user": f"u{offset % 5}", "n": offset, "ts": 1_700_000_000_000 + offset})


@pytest.fixture
def topic(kafka) -> str:
    name = f"clicks_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, num_partitions=1)])[name].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    for offset in range(200):
        producer.produce(name, message(offset), partition=0)
    assert producer.flush(10) == 0
    return name


class ScriptedController:
    """Answers segmentConsumed from a script (then HOLD), and the commit steps as told."""

    def __init__(self, consumed: list[CompletionResponse], commit_start: list[str] | None = None):
        self.consumed = list(consumed)
        self.commit_start = list(commit_start or [])
        self.calls: list[tuple] = []
        self.uploaded = None

    def segment_consumed(self, segment, offset, reason, stats):
        self.calls.append(("consumed", offset, reason, stats.row_count))
        return self.consumed.pop(0) if self.consumed else CompletionResponse(proto.HOLD)

    def segment_commit_start(self, segment, offset, stats):
        self.calls.append(("commitStart", offset, stats.row_count))
        status = self.commit_start.pop(0) if self.commit_start else proto.COMMIT_CONTINUE
        return CompletionResponse(status, offset)

    def segment_upload(self, segment, offset, tar_gz):
        self.calls.append(("upload", offset))
        self.uploaded = tar_gz.read_bytes()
        return CompletionResponse(proto.UPLOAD_SUCCESS, offset, segment_location="/ds/x.tmp")

    def segment_commit_end(self, segment, offset, location, segment_dir, stats):
        self.calls.append(("commitEnd", offset, location))
        assert (segment_dir / "metadata.properties").is_file()
        return CompletionResponse(proto.COMMIT_SUCCESS, offset)

    def segment_stopped_consuming(self, segment, offset, reason):
        self.calls.append(("stopped", offset, reason))
        return CompletionResponse(proto.PROCESSED)


def consumer_for(kafka, topic, controller, tmp_path, *, row_limit=100, start=0, time_ms=None):
    config = table_config(kafka, topic)
    stream = table_stream_configs(config)[0]
    segment = MutableSegment("clicks__0__0__20260101T0000Z", SCHEMA, config)
    return PartitionConsumer(
        segment=segment, stream=stream, partition=0, start_offset=start, row_limit=row_limit,
        completion=controller, consumer=KafkaPartitionConsumer(stream, 0),
        metadata=KafkaMetadataProvider(stream), build_dir=tmp_path, time_limit_ms=time_ms,
        hold_ms=20,
    )  # fmt: skip


def count(segment) -> int:
    return run_query("SELECT COUNT(*) FROM clicks", [segment])["resultTable"]["rows"][0][0]


def test_row_limit_then_commit_after_a_hold_and_a_refused_start(kafka, topic, tmp_path):
    controller = ScriptedController(
        [CompletionResponse(proto.HOLD), CompletionResponse(proto.COMMIT, build_time_sec=60),
         CompletionResponse(proto.COMMIT)],
        commit_start=[proto.FAILED],
    )  # fmt: skip
    pc = consumer_for(kafka, topic, controller, tmp_path)
    assert pc.run() is ConsumerState.COMMITTED
    # 100 rows; offsets 7, 30 and 31 were malformed, so the 100th row is at offset 102
    assert pc.current_offset == 103 and pc.segment.num_docs == 100
    assert pc.stats.rows_malformed == 3 and pc.stats.messages == 103
    assert [offset for offset, _ in pc.stats.recent_errors] == [7, 30, 31]
    assert pc.stop_reason == proto.REASON_ROW_LIMIT
    kinds = [c[0] for c in controller.calls]
    assert kinds == ["consumed", "consumed", "commitStart", "consumed", "commitStart", "upload",
                     "commitEnd"]  # fmt: skip
    assert controller.calls[0] == ("consumed", 103, "rowLimit", 100)
    built = load_segment(pc.built.path)
    assert built.total_docs == 100 and built.name == "clicks__0__0__20260101T0000Z"
    assert built.metadata.custom == {
        "segment.realtime.startOffset": "0",
        "segment.realtime.endOffset": "103",
    }
    assert count(built) == count(pc.segment.snapshot()) == 100
    # the uploaded tar.gz is the same segment
    tar = tmp_path / "up.tar.gz"
    tar.write_bytes(controller.uploaded)
    assert load_segment(unpack_segment(tar, tmp_path / "unpacked")).total_docs == 100


def test_catch_up_then_keep(kafka, topic, tmp_path):
    controller = ScriptedController(
        [CompletionResponse(proto.CATCH_UP, 150), CompletionResponse(proto.KEEP, 150)]
    )
    pc = consumer_for(kafka, topic, controller, tmp_path, row_limit=50)
    assert pc.run() is ConsumerState.RETAINED
    assert pc.current_offset == 150
    assert pc.segment.num_docs == 150 - 4  # four malformed messages below 150
    assert controller.calls[0][1] == 53 and controller.calls[1][1] == 150
    assert load_segment(pc.built.path).metadata.custom["segment.realtime.endOffset"] == "150"


def test_discard_and_a_restart_from_the_start_offset_gets_the_same_rows(kafka, topic, tmp_path):
    first = consumer_for(kafka, topic, ScriptedController([CompletionResponse(proto.DISCARD)]),
                         tmp_path / "a", row_limit=60)  # fmt: skip
    assert first.run() is ConsumerState.DISCARDED
    again = consumer_for(kafka, topic, ScriptedController([CompletionResponse(proto.DISCARD)]),
                         tmp_path / "b", row_limit=60)  # fmt: skip
    again.run()
    sql = "SELECT user, SUM(n), COUNT(*) FROM clicks GROUP BY user ORDER BY user"
    assert (run_query(sql, [first.segment.snapshot()])["resultTable"]["rows"]
            == run_query(sql, [again.segment.snapshot()])["resultTable"]["rows"])  # fmt: skip
    assert first.current_offset == again.current_offset == 63


def test_time_limit_and_force_commit_end_consumption(kafka, topic, tmp_path):
    timed = consumer_for(kafka, topic, ScriptedController([CompletionResponse(proto.DISCARD)]),
                         tmp_path / "t", row_limit=10_000, time_ms=3000)  # fmt: skip
    started = time.monotonic()
    assert timed.run() is ConsumerState.DISCARDED
    assert timed.stop_reason == proto.REASON_TIME_LIMIT
    assert 2.9 < time.monotonic() - started < 15
    assert timed.current_offset == 200 and timed.segment.num_docs == 196

    forced = consumer_for(kafka, topic, ScriptedController([CompletionResponse(proto.DISCARD)]),
                          tmp_path / "f", row_limit=10_000)  # fmt: skip
    thread = threading.Thread(target=forced.run)
    thread.start()
    deadline = time.monotonic() + 20
    while forced.current_offset < 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert count(forced.segment.snapshot()) == 196  # queryable while still consuming
    forced.force_commit()
    thread.join(20)
    assert forced.state is ConsumerState.DISCARDED
    assert forced.stop_reason == proto.REASON_FORCE_COMMIT


class CountingConsumer(KafkaPartitionConsumer):
    fetches = 0

    def fetch(self, start, end=None, timeout_ms=5000):
        self.fetches += 1
        return super().fetch(start, end, timeout_ms)


def test_messages_without_rows_near_the_target_are_indexed_from_the_same_fetch(kafka, tmp_path):
    """Near the row target only (target - rows) messages may be indexed at a time; when most
    yield no row (malformed here; filtered or dedup duplicates alike), the rest of the fetched
    batch is indexed in slices, not fetched again from Kafka a few messages at a time."""
    name = f"clicks_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, num_partitions=1)])[name].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 50})
    good = set(range(15)) | set(range(190, 200))  # 15 rows, 175 malformed, then 10 rows
    for offset in range(200):
        producer.produce(name, message(offset + 1000) if offset in good else b"{bad", partition=0)
    assert producer.flush(10) == 0
    config = table_config(kafka, name)
    stream = table_stream_configs(config)[0]
    consumer = CountingConsumer(stream, 0)
    pc = PartitionConsumer(
        segment=MutableSegment("clicks__0__0__20260101T0000Z", SCHEMA, config), stream=stream,
        partition=0, start_offset=0, row_limit=20, consumer=consumer,
        completion=ScriptedController([CompletionResponse(proto.DISCARD)]),
        metadata=KafkaMetadataProvider(stream), build_dir=tmp_path, hold_ms=20,
    )  # fmt: skip
    assert pc.run() is ConsumerState.DISCARDED
    # exactly at the target: 15 rows, the 175 malformed messages, 5 more rows
    assert pc.segment.num_docs == 20 and pc.current_offset == 195
    assert pc.stats.rows_malformed == 175 and pc.stats.messages == 195
    assert pc.stats.recent_errors[-1][0] == 189
    # slice by slice from Kafka would be 35 fetches of 5 messages (each a seek) and more
    assert consumer.fetches <= 10
