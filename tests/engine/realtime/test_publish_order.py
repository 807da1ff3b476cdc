"""Unit tests (stand-in Kafka client, no broker): the consumer's counters are updated before a
batch's rows become queryable, so consumingSegmentsInfo never reports fewer bad rows than a
query's COUNT(*) implies; and a consuming segment's snapshot reports Pinot's freshness."""

from __future__ import annotations

import orjson

from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.partition_consumer import PartitionConsumer
from engine.spi import Schema, TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.kafka import MessageBatch

SCHEMA = Schema.from_json(
    {"schemaName": "t", "dimensionFieldSpecs": [{"name": "k", "dataType": "INT"}]}
)
CONFIG = TableConfig.from_json(
    {
        "tableName": "t",
        "tableType": "REALTIME",
        "tableIndexConfig": {
            "streamConfigs": {
                "streamType": "kafka",
                "stream.kafka.topic.name": "t",
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
                "KafkaJSONMessageDecoder",
            }
        },
    }
)
END = 60


def message(offset: int) -> bytes:
    if offset % 5 == 1:
        return b"{not json"  # a decode error
    if offset % 5 == 3:
        return orjson.dumps({"k": "not a number"})  # a coercion error, found while indexing
    return orjson.dumps({"k": offset})


class Topic:
    """Offsets [0, END) in batches of 7, stamped 1_000_000 + offset; then nothing new."""

    def __init__(self):
        self.empty_fetches = 0

    def start(self, offset):
        pass

    def fetch(self, start, end, timeout_ms):
        stop = min(END, start + 7)
        offsets = list(range(start, stop))
        if not offsets:
            self.empty_fetches += 1
        return MessageBatch([message(o) for o in offsets], offsets,
                            [1_000_000 + o for o in offsets], [None] * len(offsets),
                            stop if offsets else start)  # fmt: skip

    def close(self):
        pass


class Controller:
    def segment_consumed(self, segment, offset, reason, stats):
        return CompletionResponse(proto.DISCARD)

    def segment_stopped_consuming(self, segment, offset, reason):
        return CompletionResponse(proto.PROCESSED)


class ObservedSegment(MutableSegment):
    """Records, at the instant rows become queryable (``num_docs`` grows), what a reader of
    the consumer's counters would see."""

    consumer: PartitionConsumer | None = None

    def __setattr__(self, name, value):
        if name == "num_docs" and self.consumer is not None:
            stats = self.consumer.stats
            self.seen.append((value, stats.rows_malformed, self.consumer.current_offset,
                              stats.last_message_time_ms))  # fmt: skip
        super().__setattr__(name, value)


def make(tmp_path, topic, row_limit: int, time_limit_ms: int | None = None) -> PartitionConsumer:
    segment = ObservedSegment("t__0__0__20260101T0000Z", SCHEMA, CONFIG)
    segment.seen = []
    pc = PartitionConsumer(
        segment=segment, stream=table_stream_configs(CONFIG)[0], partition=0, start_offset=0,
        row_limit=row_limit, completion=Controller(), consumer=topic, metadata=topic,
        build_dir=tmp_path, hold_ms=1, time_limit_ms=time_limit_ms,
    )  # fmt: skip
    segment.consumer = pc
    return pc


def test_bad_rows_and_offset_are_counted_before_the_rows_are_queryable(tmp_path):
    pc = make(tmp_path, Topic(), row_limit=36)  # every message of [0, 60) is a row or an error
    assert pc.run() is ConsumerState.DISCARDED
    seen = pc.segment.seen
    assert len(seen) >= 8  # one per batch
    for docs, malformed, offset, stamp in seen:
        # each message consumed is either a row or a bad row, never neither
        assert docs + malformed == offset, (docs, malformed, offset)
        assert stamp == 1_000_000 + offset - 1
    assert pc.stats.rows_malformed == 24 and pc.segment.num_docs == 36


def test_snapshot_freshness_is_the_newest_message_then_now_once_caught_up(tmp_path):
    topic = Topic()
    pc = make(tmp_path, topic, row_limit=10_000)
    segment = pc.segment
    assert segment.snapshot().freshness_ms(5_000_000) is None  # nothing indexed yet
    batch = topic.fetch(0, None, 1)
    pc._index(batch, catching_up=False)
    assert segment.snapshot().freshness_ms(5_000_000) == 1_000_006
    assert segment.snapshot().last_indexed_ms > 0
    # the stream has nothing new: as fresh as the query's now
    segment.caught_up = True
    assert segment.snapshot().freshness_ms(5_000_000) == 5_000_000


def test_a_segment_that_stopped_consuming_is_as_old_as_its_last_message(tmp_path):
    """Caught up when its time limit came, then held in the commit: the stream moves on
    without it, so it must not go on reading as fresh as now."""
    topic = Topic()
    pc = make(tmp_path, topic, row_limit=10_000, time_limit_ms=300)
    assert pc.run() is ConsumerState.DISCARDED
    assert topic.empty_fetches > 0 and pc.stop_reason == proto.REASON_TIME_LIMIT
    assert pc.segment.snapshot().freshness_ms(5_000_000) == 1_000_000 + END - 1


def test_freshness_falls_back_to_the_index_time_without_a_stream_timestamp():
    segment = MutableSegment("t__0__0__20260101T0000Z", SCHEMA, CONFIG)
    import pyarrow as pa

    segment.index(pa.table({"k": pa.array([1, 2], pa.int32())}))
    snap = segment.snapshot()
    assert snap.latest_ingestion_ms is None
    assert snap.freshness_ms(9) == snap.last_indexed_ms > 0
