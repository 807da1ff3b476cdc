"""Where the validation repair places a DONE segment's new successor, on a real ZooKeeper
(the stream is a one-partition metadata provider): on the DONE segment's servers only while
they are consuming servers; a segment the SegmentRelocator moved to a ``realtimeCompleted``
server gets a successor on the partition's consuming servers instead."""

from __future__ import annotations

import uuid

import pytest
from kazoo.client import KazooClient

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.ensure_consuming import ensure_partitions_consuming
from engine.clusterstate import ClusterStore, ResourceAssignment
from engine.realtime.llc_name import LLCSegmentName
from engine.spi import TableConfig

pytestmark = pytest.mark.integration
TABLE = "ev_REALTIME"
NOW = 1_785_585_600_000  # 2026-08-01T12:00Z
DONE_SEGMENT = "ev__0__3__20260801T1200Z"
SUCCESSOR = "ev__0__4__20260801T1200Z"
CONSUMING_SERVERS = ["Server_c_1", "Server_c_2", "Server_c_3"]
COMPLETED_SERVER = "Server_done_1"


class OnePartition:
    def partition_ids(self):
        return [0]

    def offset_for(self, partition, criteria=None):
        return 0


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"place_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


def config() -> TableConfig:
    return TableConfig.from_json({
        "tableName": "ev", "tableType": "REALTIME",
        "segmentsConfig": {"replicasPerPartition": "2", "timeColumnName": "ts"},
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": "ev_topic",
            "stream.kafka.broker.list": "127.0.0.1:1",
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }},
    })  # fmt: skip


def done_segment_on(store: ClusterStore, replicas: dict[str, str]) -> None:
    """The partition's latest segment, DONE at offset 42, with no successor."""
    store.put_ideal_state(ResourceAssignment(TABLE, segments={DONE_SEGMENT: replicas}))
    meta = llc.new_consuming_segment(TABLE, LLCSegmentName.parse(DONE_SEGMENT), 0, 2, 100,
                                     now_ms=NOW, extra={})  # fmt: skip
    meta.extra.update({llc.STATUS: llc.DONE, llc.END_OFFSET: "42"})
    store.put_segment_metadata(meta)


def repair(store: ClusterStore) -> list[str]:
    return ensure_partitions_consuming(store, config(), CONSUMING_SERVERS, 2, OnePartition(),
                                       now_ms=NOW)  # fmt: skip


def test_successor_of_a_relocated_segment_goes_to_the_consuming_servers(store):
    done_segment_on(store, {COMPLETED_SERVER: "ONLINE"})  # moved by the SegmentRelocator
    assert repair(store) == [f"{DONE_SEGMENT} is DONE without a successor: created {SUCCESSOR}"]
    ideal = store.ideal_state(TABLE).segments
    # partition 0 with 2 replicas: the first two consuming servers, never the completed one
    assert ideal[SUCCESSOR] == dict.fromkeys(["Server_c_1", "Server_c_2"], "CONSUMING")
    assert ideal[DONE_SEGMENT] == {COMPLETED_SERVER: "ONLINE"}  # the DONE one stays put
    assert store.segment_metadata(TABLE, SUCCESSOR).extra[llc.START_OFFSET] == "42"
    assert repair(store) == []


def test_successor_stays_with_a_segment_partly_relocated(store):
    """One replica moved, one still on a consuming server: not all of its servers consume,
    so the successor goes to the partition's consuming servers."""
    done_segment_on(store, {"Server_c_3": "ONLINE", COMPLETED_SERVER: "ONLINE"})
    repair(store)
    assert store.ideal_state(TABLE).segments[SUCCESSOR] == dict.fromkeys(
        ["Server_c_1", "Server_c_2"], "CONSUMING"
    )


def test_successor_stays_on_the_consuming_servers_that_committed(store):
    """Not relocated: the successor goes where the partition was consumed, even when that is
    not where the default assignment would put a new partition."""
    done_segment_on(store, dict.fromkeys(["Server_c_2", "Server_c_3"], "ONLINE"))
    repair(store)
    assert store.ideal_state(TABLE).segments[SUCCESSOR] == dict.fromkeys(
        ["Server_c_2", "Server_c_3"], "CONSUMING"
    )
