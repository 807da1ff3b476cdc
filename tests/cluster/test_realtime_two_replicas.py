"""Two replicas of a consuming segment reach the end criteria at different offsets; through
the controller's real completion FSM the one with the larger offset commits, the other
catches up to the same offset and keeps an identical build. Real Kafka-protocol broker;
the protocol's calls go to the FSM in-process, so that the test can time each replica's
calls (its HTTP endpoints are tested in tests/cluster/test_llc_api.py and, between real
processes, in tests/cluster_e2e/test_realtime.py)."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.completion_fsm import SegmentCompletionFSM
from cluster.logic.realtime.completion_manager import SegmentCompletionManager
from engine.clusterstate.segment_status import is_committed
from engine.common.clock import now_ms
from engine.query.runner import run_query
from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.llc_name import LLCSegmentName
from engine.realtime.partition_consumer import PartitionConsumer
from engine.segment import load_segment, read_metadata, unpack_segment
from engine.spi import Schema, TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

pytestmark = pytest.mark.integration
SCHEMA = Schema.from_json(
    {
        "schemaName": "rsvp",
        "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "guests", "dataType": "INT"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG",
                                "format": "1:MILLISECONDS:EPOCH", "granularity": "1:MILLISECONDS"}],
    }
)  # fmt: skip


class InProcessController:
    """One replica's CompletionClient, calling the controller's manager directly."""

    def __init__(self, manager: SegmentCompletionManager, instance: str, deep_store: Path):
        self.manager, self.instance, self.deep_store = manager, instance, deep_store
        self.before_commit = lambda: None

    def segment_consumed(self, segment, offset, reason, stats):
        return self.manager.segment_consumed(segment, self.instance, offset, reason)

    def segment_commit_start(self, segment, offset, stats):
        self.before_commit()
        return self.manager.segment_commit_start(segment, self.instance, offset)

    def segment_upload(self, segment, offset, tar_gz):
        def store() -> str:
            location = self.deep_store / f"{segment}.tmp.{uuid.uuid4().hex[:8]}"
            shutil.copyfile(tar_gz, location)
            return str(location)

        return self.manager.segment_upload(segment, self.instance, offset, store)

    def segment_commit_end(self, segment, offset, location, segment_dir, stats):
        return self.manager.segment_commit_end(segment, self.instance, offset, location)

    def segment_stopped_consuming(self, segment, offset, reason):
        return self.manager.segment_stopped_consuming(segment, self.instance, offset, reason)


def produce(kafka, topic: str, offsets: range) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    for i in offsets:
        row = {"city": f"c{i % 7}", "guests": i % 4, "ts": 1_700_000_000_000 + i * 1000}
        producer.produce(topic, orjson.dumps(row), partition=0)
    assert producer.flush(10) == 0


def test_replicas_at_different_offsets_agree_on_one_end_offset(kafka, tmp_path):
    topic = f"rsvp_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(10)
    config = TableConfig.from_json(
        {
            "tableName": "rsvp",
            "tableType": "REALTIME",
            "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "2"},
            "tableIndexConfig": {
                "streamConfigs": {
                    "streamType": "kafka",
                    "stream.kafka.topic.name": topic,
                    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
                    "KafkaJSONMessageDecoder",
                    "stream.kafka.broker.list": kafka.bootstrap_servers,
                    "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
                    # Tansu holds every fetch for the full wait; 10 ms keeps the test fast
                    "stream.kafka.consumer.prop.fetch.wait.max.ms": "10",
                }
            },
        }
    )
    stream = table_stream_configs(config)[0]
    name = LLCSegmentName.create("rsvp", 0, 0, now_ms())
    zk = {str(name): llc.new_consuming_segment("rsvp_REALTIME", name, 0, 2, 10_000)}
    deep_store = tmp_path / "deepstore"
    deep_store.mkdir()

    def commit(instance, offset, location):
        """The controller's commit: the segment DONE at the winner's offset, the next one
        CONSUMING from there."""
        tar = deep_store / f"{name}.tar.gz"
        Path(location).rename(tar)
        built = read_metadata(unpack_segment(tar, tmp_path / "verify"))
        zk[str(name)] = llc.committed_segment(
            zk[str(name)], offset, built, download_url=str(tar), size_in_bytes=tar.stat().st_size
        )
        following = name.next(now_ms())
        zk[str(following)] = llc.new_consuming_segment(
            "rsvp_REALTIME", following, offset, 2, 10_000
        )
        return True

    def fsm_for(segment):
        meta = zk[segment]
        done = is_committed(meta)
        return SegmentCompletionFSM(
            segment, int(meta.extra[llc.NUM_REPLICAS]), commit,
            committed_offset=int(meta.extra[llc.END_OFFSET]) if done else None,
            pick_winner_ms=15_000,  # generous: this machine's two cores are shared
        )  # fmt: skip

    manager = SegmentCompletionManager(fsm_for, lambda table: table == "rsvp_REALTIME")
    produce(kafka, topic, range(0, 150))

    def replica(instance: str, time_limit_ms: int) -> PartitionConsumer:
        return PartitionConsumer(
            segment=MutableSegment(str(name), SCHEMA, config), stream=stream, partition=0,
            start_offset=int(zk[str(name)].extra[llc.START_OFFSET]), row_limit=10_000,
            completion=InProcessController(manager, instance, deep_store),
            consumer=KafkaPartitionConsumer(stream, 0, client_id=instance),
            metadata=KafkaMetadataProvider(stream), build_dir=tmp_path / instance,
            time_limit_ms=time_limit_ms, hold_ms=100,
        )  # fmt: skip

    early, late = replica("Server_a_1", 1000), replica("Server_b_2", 3000)

    def caught_up() -> None:
        # A slow committer: the other replica hears CATCH_UP and reaches the winner's offset
        # before the commit completes. (Once it is committed, a replica still behind gets
        # DISCARD and downloads instead, which is Pinot's other, equally valid, path.)
        deadline = time.monotonic() + 30
        while early.current_offset < 200 and time.monotonic() < deadline:
            time.sleep(0.02)

    late.completion.before_commit = caught_up
    threads = [threading.Thread(target=r.run) for r in (early, late)]
    for thread in threads:
        thread.start()
    time.sleep(1.8)  # the early replica stopped at 150 and is holding
    produce(kafka, topic, range(150, 200))
    for thread in threads:
        thread.join(60)
    assert late.state is ConsumerState.COMMITTED, (late.state, late.error)
    assert early.state is ConsumerState.RETAINED, (early.state, early.error)
    assert early.stop_reason == late.stop_reason == proto.REASON_TIME_LIMIT
    assert early.current_offset == late.current_offset == 200

    done = zk[str(name)]
    assert llc.status_of(done) == llc.DONE and done.extra[llc.END_OFFSET] == "200"
    assert done.total_docs == 200
    following = [m for n, m in zk.items() if n != str(name)]
    assert len(following) == 1 and following[0].extra[llc.START_OFFSET] == "200"
    assert manager.active() == []

    sql = (
        "SELECT city, SUM(guests), COUNT(*), MIN(ts), MAX(ts) FROM rsvp GROUP BY city ORDER BY city"
    )
    kept = run_query(sql, [load_segment(early.built.path)])["resultTable"]["rows"]
    committed = run_query(sql, [load_segment(late.built.path)])["resultTable"]["rows"]
    assert kept == committed and sum(row[2] for row in kept) == 200
