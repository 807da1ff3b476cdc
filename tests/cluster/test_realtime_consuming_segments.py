"""Creating CONSUMING segments per partition, committing them, and the validation repairs,
against real ZooKeeper and the session's Kafka."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kazoo.client import KazooClient

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.consuming_segments import (
    commit_segment,
    consuming_instances,
    create_consuming_segments,
)
from cluster.logic.realtime.ensure_consuming import ensure_partitions_consuming
from engine.clusterstate import ClusterStore
from engine.segment.metadata import SegmentMetadata
from engine.spi import TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider
from tests.cluster_e2e.realtime_helpers import wait_until

pytestmark = pytest.mark.integration
SERVERS = ["Server_h_1", "Server_h_2", "Server_h_3"]
NOW = 1_785_585_600_000  # 2026-08-01T12:00Z


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"rt_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


@pytest.fixture
def table(kafka):
    topic = f"ev_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=3)])[topic].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for partition, count in ((0, 5), (1, 3)):
        for _ in range(count):
            producer.produce(topic, b"{}", partition=partition)
    assert producer.flush(10) == 0
    config = TableConfig.from_json(
        {
            "tableName": "ev",
            "tableType": "REALTIME",
            "segmentsConfig": {"replicasPerPartition": "2"},
            "ingestionConfig": {
                "streamIngestionConfig": {
                    "streamConfigMaps": [
                        {
                            "streamType": "kafka",
                            "stream.kafka.topic.name": topic,
                            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream."
                            "kafka.KafkaJSONMessageDecoder",
                            "stream.kafka.broker.list": kafka.bootstrap_servers,
                            "realtime.segment.flush.threshold.rows": "9000",
                        }
                    ]
                }
            },
        }
    )
    return config, KafkaMetadataProvider(table_stream_configs(config)[0])


def built(rows: int) -> SegmentMetadata:
    return SegmentMetadata("x", "ev_REALTIME", rows, 42, NOW, {}, start_time_ms=NOW - 60_000,
                           end_time_ms=NOW - 1)  # fmt: skip


def test_assignment_spreads_partitions_and_replicas():
    assert consuming_instances(0, SERVERS, 2) == ["Server_h_1", "Server_h_2"]
    assert consuming_instances(1, SERVERS, 2) == ["Server_h_3", "Server_h_1"]
    assert consuming_instances(2, SERVERS, 2) == ["Server_h_2", "Server_h_3"]
    with pytest.raises(ValueError, match="need as many servers"):
        consuming_instances(0, SERVERS, 4)


def test_create_commit_and_repair(store, table):
    config, provider = table
    names = create_consuming_segments(store, config, SERVERS, 2, provider, now_ms=NOW)
    assert names == ["ev__0__0__20260801T1200Z", "ev__1__0__20260801T1200Z",
                     "ev__2__0__20260801T1200Z"]  # fmt: skip
    ideal = store.ideal_state("ev_REALTIME")
    assert ideal.segments["ev__1__0__20260801T1200Z"] == {
        "Server_h_3": "CONSUMING", "Server_h_1": "CONSUMING"
    }  # fmt: skip
    first = store.segment_metadata("ev_REALTIME", "ev__0__0__20260801T1200Z")
    # no auto.offset.reset: largest, i.e. after the 5 messages already in partition 0
    assert first.extra[llc.START_OFFSET] == "5"
    assert first.extra[llc.STATUS] == "IN_PROGRESS" and first.extra[llc.NUM_REPLICAS] == "2"
    # 9000 rows per server; each server consumes 2 partitions
    assert first.extra[llc.FLUSH_THRESHOLD_SIZE] == "4500"

    following = commit_segment(store, config, "ev__0__0__20260801T1200Z", 25, built(20),
                               download_url="http://c/segments/ev/x", size_in_bytes=1000,
                               now_ms=NOW + 60_000)  # fmt: skip
    assert following == "ev__0__1__20260801T1201Z"
    done = store.segment_metadata("ev_REALTIME", "ev__0__0__20260801T1200Z")
    assert done.extra[llc.STATUS] == "DONE" and done.extra[llc.END_OFFSET] == "25"
    assert done.total_docs == 20 and done.download_url == "http://c/segments/ev/x"
    nxt = store.segment_metadata("ev_REALTIME", following)
    assert nxt.extra[llc.START_OFFSET] == "25" and nxt.extra[llc.STATUS] == "IN_PROGRESS"
    ideal = store.ideal_state("ev_REALTIME")
    assert ideal.segments["ev__0__0__20260801T1200Z"] == dict.fromkeys(
        ["Server_h_1", "Server_h_2"], "ONLINE"
    )
    assert ideal.segments[following] == dict.fromkeys(["Server_h_1", "Server_h_2"], "CONSUMING")

    # nothing to repair in a healthy table
    assert ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW) == []

    # the consuming segment of partition 0 is deleted: a successor of the DONE one appears
    store.delete_segment_metadata("ev_REALTIME", following)
    store.update_ideal_state("ev_REALTIME", lambda i: (i.segments.pop(following), i)[1])

    # partition 1: one replica OFFLINE; partition 2: all OFFLINE
    def set_states(ideal):
        ideal.segments["ev__1__0__20260801T1200Z"]["Server_h_3"] = "OFFLINE"
        ideal.segments["ev__2__0__20260801T1200Z"] = dict.fromkeys(
            ["Server_h_2", "Server_h_3"], "OFFLINE"
        )
        return ideal

    store.update_ideal_state("ev_REALTIME", set_states)
    # the DONE segment is ONLINE on all its replicas: its commit finished, so its successor
    # is created at once, without waiting max.segment.completion.time.millis
    assert ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW) == [
        "ev__0__0__20260801T1200Z is DONE without a successor: created ev__0__1__20260801T1200Z",
        "OFFLINE replicas of ev__1__0__20260801T1200Z set back to CONSUMING",
        "every replica of ev__2__0__20260801T1200Z is OFFLINE: created ev__2__1__20260801T1200Z",
    ]
    repaired = store.segment_metadata("ev_REALTIME", "ev__0__1__20260801T1200Z")
    assert repaired.extra[llc.START_OFFSET] == "25"
    ideal = store.ideal_state("ev_REALTIME")
    assert ideal.segments["ev__0__1__20260801T1200Z"] == dict.fromkeys(
        ["Server_h_1", "Server_h_2"], "CONSUMING"
    )
    assert set(ideal.segments["ev__1__0__20260801T1200Z"].values()) == {"CONSUMING"}
    assert ideal.segments["ev__2__1__20260801T1200Z"] == dict.fromkeys(
        ["Server_h_2", "Server_h_3"], "CONSUMING"
    )
    restarted = store.segment_metadata("ev_REALTIME", "ev__2__1__20260801T1200Z")
    start = store.segment_metadata("ev_REALTIME", "ev__2__0__20260801T1200Z")
    assert restarted.extra[llc.START_OFFSET] == start.extra[llc.START_OFFSET]
    # an IN_PROGRESS segment the ideal state lost (died between commit steps 2 and 3)
    store.update_ideal_state(
        "ev_REALTIME", lambda i: (i.segments.pop("ev__1__0__20260801T1200Z"), i)[1]
    )
    assert ensure_partitions_consuming(
        store, config, SERVERS, 2, provider, now_ms=NOW, max_completion_ms=0
    ) == ["ev__1__0__20260801T1200Z was missing from the ideal state: added as CONSUMING"]
    assert ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW,
                                       max_completion_ms=0) == []  # fmt: skip


def test_partitions_added_to_the_topic_get_consuming_segments(store, table, kafka):
    """Partitions added to the topic while it is consumed: RealtimeSegmentValidationManager's
    repair gives each a CONSUMING segment from its smallest offset, so the records produced to
    it before the repair ran are not lost."""
    config, provider = table
    create_consuming_segments(store, config, SERVERS, 2, provider, now_ms=NOW)
    topic = table_stream_configs(config)[0].topic
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    producer.produce(topic, b"{}", partition=4)
    assert producer.flush(10) == 0
    actions = wait_until(
        lambda: ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW),
        "the new partitions to be seen", 30,
    )  # fmt: skip
    assert actions == ["partition 3 is new: created ev__3__0__20260801T1200Z",
                       "partition 4 is new: created ev__4__0__20260801T1200Z"]  # fmt: skip
    for partition in (3, 4):
        new = store.segment_metadata("ev_REALTIME", f"ev__{partition}__0__20260801T1200Z")
        assert new.extra[llc.START_OFFSET] == "0"  # from the smallest offset: nothing lost
    ideal = store.ideal_state("ev_REALTIME").segments
    assert set(ideal["ev__4__0__20260801T1200Z"].values()) == {"CONSUMING"}
    assert len(ideal["ev__4__0__20260801T1200Z"]) == 2
    assert ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW) == []


def test_pause_commit_without_successor_and_resume_from_smallest(store, table):
    import orjson

    from cluster.logic.realtime import pause

    config, provider = table
    create_consuming_segments(store, config, SERVERS, 2, provider, now_ms=NOW)
    details = pause.pause_consumption(store, "ev_REALTIME", now_ms=NOW + 123)
    assert details["pauseFlag"] is True and details["reasonCode"] == "ADMINISTRATIVE"
    assert details["consumingSegments"] == [
        "ev__0__0__20260801T1200Z", "ev__1__0__20260801T1200Z", "ev__2__0__20260801T1200Z"
    ]  # fmt: skip
    assert details["comment"].startswith("Pause flag is set. Consuming segments are being")
    assert details["timestamp"].endswith(".123")
    ideal = store.ideal_state("ev_REALTIME")
    state = orjson.loads(ideal.extra_fields["pauseState"])
    assert state["paused"] is True and state["indexOfInactiveTopics"] == []
    assert ideal.extra_fields["isTablePaused"] == "true"
    assert pause.pause_status(store, "ev_REALTIME")["pauseFlag"] is True
    # paused: no repairs, and a commit creates no successor
    assert ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW) == []
    assert commit_segment(store, config, "ev__0__0__20260801T1200Z", 5, built(0),
                          download_url="", size_in_bytes=10, now_ms=NOW) is None  # fmt: skip
    ideal = store.ideal_state("ev_REALTIME")
    assert set(ideal.segments["ev__0__0__20260801T1200Z"].values()) == {"ONLINE"}
    assert "pauseState" in ideal.extra_fields  # kept through the ideal-state update

    with pytest.raises(ValueError, match="consumeFrom must be one of"):
        pause.resume_consumption(store, "ev_REALTIME", consume_from="yesterday")
    assert pause.pause_status(store, "ev_REALTIME")["pauseFlag"] is True
    details, criteria = pause.resume_consumption(store, "ev_REALTIME", consume_from="SMALLEST")
    assert details["pauseFlag"] is False and details["comment"].startswith("Pause flag is cleared")
    assert criteria.kind == "smallest"
    actions = ensure_partitions_consuming(store, config, SERVERS, 2, provider, now_ms=NOW,
                                          max_completion_ms=0, offset_criteria=criteria)  # fmt: skip
    assert actions == [
        "ev__0__0__20260801T1200Z is DONE without a successor: created ev__0__1__20260801T1200Z"
    ]
    successor = store.segment_metadata("ev_REALTIME", "ev__0__1__20260801T1200Z")
    assert successor.extra[llc.START_OFFSET] == "0"  # consumeFrom=smallest, not end offset 5
    # a table paused with only the legacy flag
    store.update_ideal_state(
        "ev_REALTIME",
        lambda i: (i.extra_fields.pop("pauseState"), i.extra_fields.update(isTablePaused="true"),
                   i)[2],
    )  # fmt: skip
    legacy = pause.pause_status(store, "ev_REALTIME")
    assert legacy["pauseFlag"] is True and legacy["comment"] == "Table is paused."
    assert "timestamp" not in legacy and "reasonCode" not in legacy
