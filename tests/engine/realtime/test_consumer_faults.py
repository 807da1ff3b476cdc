"""Unit tests (no broker) of the consuming loop's fault handling, with stand-ins for the
Kafka client: an out-of-range offset moves to auto.offset.reset and consumption goes on; a
transient error is retried; a permanent one stops the partition and tells the controller."""

from __future__ import annotations

import orjson

from engine.common.clock import now_ms
from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.partition_consumer import PartitionConsumer
from engine.spi import Schema, TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.errors import (
    OffsetOutOfRangeError,
    PermanentStreamError,
    TransientStreamError,
)
from engine.stream.kafka import MessageBatch

SCHEMA = Schema.from_json(
    {"schemaName": "t", "dimensionFieldSpecs": [{"name": "k", "dataType": "STRING"}]}
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
                "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            }
        },
    }
)


class FakeTopic:
    """Messages at offsets [earliest, 100); fetch raises the scripted errors first."""

    def __init__(self, earliest: int, errors: list[Exception]):
        self.earliest = earliest
        self.errors = list(errors)
        self.starts: list[int] = []

    def start(self, offset):
        self.starts.append(offset)

    def fetch(self, start, end, timeout_ms):
        if self.errors:
            raise self.errors.pop(0)
        if start < self.earliest:
            raise OffsetOutOfRangeError("gone", offset=start, earliest=self.earliest, latest=100)
        stop = min(100, start + 10, end if end is not None else 100)
        offsets = list(range(start, stop))
        values = [orjson.dumps({"k": f"v{o}"}) for o in offsets]
        stamps = [1_000_000 + o for o in offsets]
        return MessageBatch(values, offsets, stamps, [None] * len(offsets),
                            stop if offsets else start)  # fmt: skip

    def offset_for(self, partition, criteria):
        assert criteria.kind == "smallest"
        return self.earliest

    def close(self):
        pass


class Controller:
    def __init__(self):
        self.calls = []

    def segment_consumed(self, segment, offset, reason, stats):
        self.calls.append(("consumed", offset, reason))
        return CompletionResponse(proto.DISCARD)

    def segment_stopped_consuming(self, segment, offset, reason):
        self.calls.append(("stopped", offset, reason))
        return CompletionResponse(proto.PROCESSED)


def consumer(topic: FakeTopic, controller, tmp_path, start: int) -> PartitionConsumer:
    stream = table_stream_configs(CONFIG)[0]
    return PartitionConsumer(
        segment=MutableSegment("t__0__0__20260101T0000Z", SCHEMA, CONFIG), stream=stream,
        partition=0, start_offset=start, row_limit=25, completion=controller, consumer=topic,
        metadata=topic, build_dir=tmp_path, hold_ms=1,
    )  # fmt: skip


def test_deleted_offset_resumes_at_auto_offset_reset_and_transient_errors_retry(tmp_path,
                                                                                monkeypatch):  # fmt: skip
    monkeypatch.setattr("engine.realtime.partition_consumer.RETRY_MS", 1)
    topic = FakeTopic(earliest=40, errors=[TransientStreamError("broker restarting")])
    controller = Controller()
    pc = consumer(topic, controller, tmp_path, start=5)  # offsets 5..39 were deleted
    assert pc.run() is ConsumerState.DISCARDED
    assert pc.stats.offset_resets == 1 and pc.stats.transient_errors == 1
    assert pc.current_offset == 65 and pc.segment.num_docs == 25
    assert controller.calls == [("consumed", 65, "rowLimit")]


def test_permanent_error_stops_and_tells_the_controller(tmp_path):
    topic = FakeTopic(earliest=0, errors=[PermanentStreamError("topic 't' does not exist")])
    controller = Controller()
    pc = consumer(topic, controller, tmp_path, start=3)
    assert pc.run() is ConsumerState.ERROR
    assert controller.calls == [("stopped", 3, "PermanentStreamError")]
    assert "does not exist" in pc.error


def test_consumer_info_has_pinots_shape_and_lags(tmp_path):
    from engine.realtime.consuming_info import segment_consumer_info

    pc = consumer(FakeTopic(earliest=0, errors=[]), Controller(), tmp_path, start=0)
    fresh = segment_consumer_info(pc, None, now_ms=2_000_000)
    assert fresh["consumerState"] == "CONSUMING"
    assert fresh["partitionOffsetInfo"]["recordsLagMap"] == {"0": "NOT_CALCULATED"}
    pc.run()
    info = segment_consumer_info(pc, 100, now_ms=2_000_000)
    assert info == {
        "segmentName": "t__0__0__20260101T0000Z",
        "consumerState": "NOT_CONSUMING",
        "lastConsumedTimestamp": pc.stats.last_consumed_at_ms,
        "partitionToOffsetMap": {"0": "25"},
        "partitionOffsetInfo": {
            "currentOffsetsMap": {"0": "25"},
            "latestUpstreamOffsetMap": {"0": "100"},
            "recordsLagMap": {"0": "75"},
            "availabilityLagMsMap": {"0": str(2_000_000 - 1_000_024)},
        },
        "rowsWithErrors": 0,
        "stalled": False,
        "stalledSinceMs": None,
    }
    # a latest offset read before the consumer passed it: lag clamps at 0
    behind = segment_consumer_info(pc, 20, now_ms=2_000_000)["partitionOffsetInfo"]
    assert behind["recordsLagMap"] == {"0": "0"} and behind["availabilityLagMsMap"] == {"0": "0"}


class EmptyTopic(FakeTopic):
    def fetch(self, start, end, timeout_ms):
        return MessageBatch([], [], [], [], start)


def test_time_limit_counts_from_creation_and_an_empty_segment_waits(tmp_path):
    import threading
    import time

    stream = table_stream_configs(CONFIG)[0]

    def make(topic, created_ms):
        return PartitionConsumer(
            segment=MutableSegment("t__0__0__20260101T0000Z", SCHEMA, CONFIG), stream=stream,
            partition=0, start_offset=0, row_limit=10**6, completion=Controller(),
            consumer=topic, metadata=topic, build_dir=tmp_path, time_limit_ms=300,
            created_ms=created_ms, hold_ms=1,
        )  # fmt: skip

    # created an hour ago, long past its 300 ms limit: it still consumes for the limit
    late = make(FakeTopic(earliest=0, errors=[]), now_ms() - 3_600_000)
    started = time.monotonic()
    assert late.run() is ConsumerState.DISCARDED
    assert late.stop_reason == "timeLimit" and time.monotonic() - started >= 0.25
    # no message at all by the time limit: keep waiting instead of committing nothing
    empty = make(EmptyTopic(earliest=0, errors=[]), None)
    thread = threading.Thread(target=empty.run)
    thread.start()
    time.sleep(0.8)
    assert empty.state is ConsumerState.INITIAL_CONSUMING
    empty.stop()
    thread.join(5)
    assert not thread.is_alive()


class KeyedTopic(FakeTopic):
    def fetch(self, start, end, timeout_ms):
        batch = super().fetch(start, end, timeout_ms)
        batch.keys = [f"key{o}".encode() for o in batch.offsets]
        return batch


def test_metadata_populate_adds_the_key_and_record_metadata(tmp_path):
    from engine.query.runner import run_query

    schema = Schema.from_json(
        {
            "schemaName": "t",
            "dimensionFieldSpecs": [
                {"name": "k", "dataType": "STRING"},
                {"name": "__key", "dataType": "STRING"},
                {"name": "__metadata$offset", "dataType": "LONG"},
            ],
        }
    )
    raw = CONFIG.to_json()
    raw["tableIndexConfig"]["streamConfigs"]["stream.kafka.metadata.populate"] = "true"
    config = TableConfig.from_json(raw)
    topic = KeyedTopic(earliest=0, errors=[])
    pc = PartitionConsumer(
        segment=MutableSegment("t__0__0__20260101T0000Z", schema, config),
        stream=table_stream_configs(config)[0], partition=0, start_offset=10, row_limit=5,
        completion=Controller(), consumer=topic, metadata=topic, build_dir=tmp_path, hold_ms=1,
    )  # fmt: skip
    assert pc.run() is ConsumerState.DISCARDED
    rows = run_query(
        'SELECT k, __key, "__metadata$offset" FROM t ORDER BY "__metadata$offset"',
        [pc.segment.snapshot()],
    )["resultTable"]["rows"]
    assert rows == [[f"v{o}", f"key{o}", o] for o in range(10, 15)]


class StuckClient(FakeTopic):
    """A client that hands over nothing, ever (stuck on a broker that froze), while Kafka's
    answer for the partition (``readable_end``) says 100 offsets are there."""

    closed = False

    def fetch(self, start, end, timeout_ms):
        return MessageBatch([], [], [], [], start)

    def position(self):
        return None

    def readable_end(self, partition, timeout_ms=None):
        return 100

    def close(self):
        self.closed = True


def test_a_stalled_consumer_is_reported_then_recreated_and_goes_on(tmp_path):
    stuck, fresh = StuckClient(earliest=0, errors=[]), FakeTopic(earliest=0, errors=[])
    made = []

    def new_consumer():
        made.append(fresh)
        return fresh

    stream = table_stream_configs(CONFIG)[0]
    pc = PartitionConsumer(
        segment=MutableSegment("t__0__0__20260101T0000Z", SCHEMA, CONFIG), stream=stream,
        partition=0, start_offset=0, row_limit=25, completion=Controller(), consumer=stuck,
        metadata=stuck, build_dir=tmp_path, hold_ms=1, stall_ms=200, new_consumer=new_consumer,
    )  # fmt: skip
    assert pc.run() is ConsumerState.DISCARDED
    assert made == [fresh] and stuck.closed is True  # closed on a thread of its own
    assert (pc.stall.stalls, pc.stall.recoveries, pc.stall.stalled) == (1, 1, False)
    assert pc.current_offset == 25 and pc.segment.num_docs == 25  # nothing lost or doubled
