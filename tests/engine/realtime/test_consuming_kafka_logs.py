"""The consuming loop over what a real Kafka log holds besides plain records: offsets deleted
under the consumer (delete_records, retention), transactions (aborted rows, the offsets taken
by commit and abort markers) and compaction (offsets missing in the middle). Each segment must
end at the offset every replica agrees on, never stall at a gap, and never count a row twice or
miss one. The controller is scripted (tests/engine/realtime/test_partition_consumer.py)."""

from __future__ import annotations

import threading
import time
import uuid

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from engine.query.runner import run_query
from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.partition_consumer import ConsumerState, PartitionConsumer
from engine.spi import Schema, TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer
from tests.cluster_e2e.realtime_helpers import wait_until
from tests.engine.realtime.test_partition_consumer import ScriptedController

pytestmark = pytest.mark.integration
SCHEMA = Schema.from_json({
    "schemaName": "ev",
    "dimensionFieldSpecs": [{"name": "k", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
})  # fmt: skip
DISCARD = CompletionResponse(proto.DISCARD)


def make_topic(kafka, **config: str) -> str:
    topic = f"logs_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, config=config)])[topic].result(10)
    return topic


def record(n: int, key: str | None = None) -> bytes:
    return orjson.dumps({"k": key or f"k{n % 7}", "n": n})


def produce(kafka, topic: str, numbers, timestamp_ms=None, key=None, batches: int = 1) -> None:
    """`numbers` as records; in `batches` flushed batches 0.2 s apart, so that a topic with a
    short segment.ms puts them in as many log segments."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    numbers = list(numbers)
    size = -(-len(numbers) // batches)
    for i in range(0, len(numbers), size):
        for n in numbers[i : i + size]:
            k = key(n) if key else None
            extra = {"timestamp": timestamp_ms} if timestamp_ms else {}
            producer.produce(topic, record(n, k), key=k.encode() if k else None, **extra)
        assert producer.flush(10) == 0
        if batches > 1:
            time.sleep(0.2)


def table_config(kafka, topic: str) -> TableConfig:
    return TableConfig.from_json({
        "tableName": "ev", "tableType": "REALTIME",
        "ingestionConfig": {"streamIngestionConfig": {"streamConfigMaps": [{
            "streamType": "kafka", "stream.kafka.topic.name": topic,
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
            "stream.kafka.broker.list": kafka.bootstrap_servers,
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
        }]}},
    })  # fmt: skip


def consumer_for(kafka, topic, script, tmp_path, *, start=0, row_limit=10**6, time_ms=None):
    config = table_config(kafka, topic)
    stream = table_stream_configs(config)[0]
    segment = MutableSegment(f"ev__0__{uuid.uuid4().int % 1000}__20260101T0000Z", SCHEMA, config)
    return PartitionConsumer(
        segment=segment, stream=stream, partition=0, start_offset=start, row_limit=row_limit,
        completion=ScriptedController(script), consumer=KafkaPartitionConsumer(stream, 0),
        metadata=KafkaMetadataProvider(stream), build_dir=tmp_path, time_limit_ms=time_ms,
        hold_ms=20,
    )  # fmt: skip


def numbers(pc: PartitionConsumer) -> list[int]:
    answer = run_query("SELECT n FROM ev ORDER BY n LIMIT 100000", [pc.segment.snapshot()],
                       table_schema=SCHEMA)  # fmt: skip
    return [row[0] for row in answer["resultTable"]["rows"]]


def metadata(kafka, topic: str) -> KafkaMetadataProvider:
    return KafkaMetadataProvider(table_stream_configs(table_config(kafka, topic))[0])


def log_start(kafka, topic: str) -> int:
    return metadata(kafka, topic).earliest_offset(0)


def test_a_start_offset_deleted_with_delete_records_resumes_at_the_earliest(kafka, tmp_path):
    """The next segment starts where the last one ended (50), but the records up to 120 were
    deleted meanwhile: auto.offset.reset (smallest) moves it to 120, counted once."""
    topic = make_topic(kafka)
    produce(kafka, topic, range(300))
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    deleted = admin.delete_records([TopicPartition(topic, 0, 120)])
    assert next(iter(deleted.values())).result(10).low_watermark == 120
    pc = consumer_for(kafka, topic, [DISCARD], tmp_path, start=50, row_limit=180)
    assert pc.run() is ConsumerState.DISCARDED
    assert pc.stats.offset_resets == 1
    assert (pc.current_offset, numbers(pc)) == (300, list(range(120, 300)))


def test_an_offset_removed_by_retention_resumes_at_the_earliest(kafka, tmp_path):
    """Records a day old in a topic that keeps an hour, in several log segments (a segment
    rolls once its first record is older than segment.ms): Kafka's retention deletes every
    closed log segment within seconds (the local Kafka checks every second), and a consumer
    starting at 0 resumes at the new log start. The last 50 records are new, so their log
    segment is never due (a day-old active segment is rolled and deleted too, under load
    before the test saw a partial log start)."""
    topic = make_topic(kafka, **{"retention.ms": "3600000", "segment.ms": "60000"})
    day_old = int(time.time() * 1000) - 86_400_000
    produce(kafka, topic, range(150), timestamp_ms=day_old, batches=3)
    time.sleep(0.2)
    produce(kafka, topic, range(150, 200))
    start = wait_until(lambda: log_start(kafka, topic), "retention to delete log segments", 60)
    assert 0 < start < 200
    pc = consumer_for(kafka, topic, [DISCARD], tmp_path, row_limit=200 - start)
    assert pc.run() is ConsumerState.DISCARDED
    assert pc.stats.offset_resets == 1
    assert (pc.current_offset, numbers(pc)) == (200, list(range(start, 200)))


def transactions(kafka, topic: str) -> None:
    """Offsets: committed 0-9 + marker 10; aborted 11-30 + marker 31; committed 32-41 + marker
    42. The aborted batch is flushed first, so its records really are in the log."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers,
                         "transactional.id": f"tx-{topic}"})  # fmt: skip
    producer.init_transactions(30)
    for first, count, commit in ((0, 10, True), (100, 20, False), (10, 10, True)):
        producer.begin_transaction()
        for n in range(first, first + count):
            producer.produce(topic, record(n), partition=0)
        producer.flush(10)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def test_transactions_aborted_rows_never_show_and_markers_never_stall(kafka, tmp_path):
    topic = make_topic(kafka)
    transactions(kafka, topic)
    # 40 records and 3 markers; the last abort's marker may reach the high watermark a moment
    # after abort_transaction returns (it once read 42 under load)
    provider = metadata(kafka, topic)
    wait_until(lambda: provider.latest_offset(0) == 43, "the log end at 43", 30)
    committed = list(range(20))

    # the row target ends two replicas at the same offset: one past the 15th committed row
    ends = []
    for _ in range(2):
        pc = consumer_for(kafka, topic, [DISCARD], tmp_path, row_limit=15)
        assert pc.run() is ConsumerState.DISCARDED
        assert numbers(pc) == committed[:15]
        ends.append(pc.current_offset)
    assert ends == [37, 37]

    # the successor from 37, told to catch up to 42 (one past the last row, the commit
    # marker's offset): it gets there, with the remaining rows, and does not wait for 43
    script = [CompletionResponse(proto.CATCH_UP, 42), DISCARD]
    pc = consumer_for(kafka, topic, script, tmp_path, start=37, row_limit=2)
    started = time.monotonic()
    assert pc.run() is ConsumerState.DISCARDED
    assert time.monotonic() - started < 10
    assert (pc.current_offset, numbers(pc)) == (42, committed[15:])

    # the next segment starts at 42, in front of the marker: only later rows, none again
    transactions_more = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    transactions_more.produce(topic, record(20), partition=0)
    assert transactions_more.flush(10) == 0
    pc = consumer_for(kafka, topic, [DISCARD], tmp_path, start=42, row_limit=1)
    assert pc.run() is ConsumerState.DISCARDED
    assert (pc.current_offset, numbers(pc)) == (44, [20])


def test_read_committed_is_the_default_and_an_open_transaction_holds_rows_back(kafka, tmp_path):
    """A transaction still open hides its rows and every row after them (Kafka's last stable
    offset) until it commits; the consumer then takes them all, once."""
    topic = make_topic(kafka)
    open_txn = Producer({"bootstrap.servers": kafka.bootstrap_servers,
                         "transactional.id": f"open-{topic}"})  # fmt: skip
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    open_txn.produce(topic, record(1), partition=0)
    open_txn.flush(10)
    produce(kafka, topic, [2])  # a plain record after the open transaction's
    pc = consumer_for(kafka, topic, [DISCARD], tmp_path, row_limit=2)
    thread = threading.Thread(target=pc.run)
    thread.start()
    time.sleep(1.5)
    assert numbers(pc) == []  # read_committed: nothing past the open transaction
    open_txn.commit_transaction(30)
    thread.join(20)
    assert pc.state is ConsumerState.DISCARDED
    assert numbers(pc) == [1, 2]


def read_log(kafka, topic: str) -> list[tuple[int, int]]:
    """(offset, n) of every record the log holds now."""
    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "log-reader",
                       "enable.partition.eof": True, "enable.auto.commit": False})  # fmt: skip
    reader.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        while True:
            message = reader.poll(5)
            assert message is not None, "no end of partition"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                return out
            out.append((message.offset(), orjson.loads(message.value())["n"]))
    finally:
        reader.close()


def test_a_compacted_topic_with_offsets_missing_in_the_middle(kafka, tmp_path):
    """Ten keys updated 30 times each, in several log segments (segment.ms 100): the log
    cleaner keeps only each key's newest value in the closed segments, leaving gaps. The consumer reads exactly what
    the log holds, ends its segment at the row target's offset, and the successor picks up
    the rest with nothing twice."""
    topic = make_topic(kafka, **{"cleanup.policy": "compact", "segment.ms": "100",
                                 "min.cleanable.dirty.ratio": "0.01",
                                 "min.compaction.lag.ms": "0"})  # fmt: skip
    produce(kafka, topic, range(300), key=lambda n: f"key{n % 10}", batches=10)

    def compacted():
        # the cleaner may take several passes: the log counts as compacted once it holds
        # still for 3 s, so that a later pass cannot change it under the consumers
        rows = read_log(kafka, topic)
        if len(rows) >= 200:
            return None
        time.sleep(3.0)
        return rows == read_log(kafka, topic) and rows

    logged = wait_until(compacted, "the log cleaner to compact the topic", 90)
    offsets = [offset for offset, _ in logged]
    assert offsets[-1] == 299 and len(offsets) < offsets[-1]  # gaps in the middle
    half = len(logged) // 2
    first = consumer_for(kafka, topic, [DISCARD], tmp_path, row_limit=half)
    assert first.run() is ConsumerState.DISCARDED
    assert first.current_offset == offsets[half - 1] + 1
    assert numbers(first) == sorted(n for _, n in logged[:half])
    second = consumer_for(kafka, topic, [DISCARD], tmp_path, start=first.current_offset,
                          row_limit=len(logged) - half)  # fmt: skip
    assert second.run() is ConsumerState.DISCARDED
    assert second.current_offset == 300
    assert numbers(second) == sorted(n for _, n in logged[half:])
