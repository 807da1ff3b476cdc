"""The controller's commit: the committer's upload, the move into the deep store and the ZK
steps, and a segment's FSM rebuilt from ZK (real ZooKeeper, local deep store)."""

from __future__ import annotations

import uuid

import orjson
import pytest
from kazoo.client import KazooClient

from cluster.logic.deep_store import DeepStore
from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.commit import finish_commit, fsm_from_zk, receive_upload
from cluster.logic.realtime.completion_fsm import FsmState
from engine.clusterstate import ClusterStore
from engine.ingest import records_to_batch
from engine.realtime import MutableSegment
from engine.realtime import completion as proto
from engine.realtime.llc_name import LLCSegmentName
from engine.segment import pack_segment
from engine.spi import Schema, TableConfig

pytestmark = pytest.mark.integration
NOW = 1_785_585_600_000
CONFIG = TableConfig.from_json(
    {
        "tableName": "ev",
        "tableType": "REALTIME",
        "segmentsConfig": {"replicasPerPartition": "1", "timeColumnName": "ts"},
        "tableIndexConfig": {
            "streamConfigs": {
                "streamType": "kafka",
                "stream.kafka.topic.name": "ev",
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
                "KafkaJSONMessageDecoder",
                "realtime.segment.flush.threshold.segment.rows": "1000",
            }
        },
    }
)
SCHEMA = Schema.from_json(
    {
        "schemaName": "ev",
        "dimensionFieldSpecs": [{"name": "k", "dataType": "STRING"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG",
                                "format": "1:MILLISECONDS:EPOCH", "granularity": "1:MILLISECONDS"}],
    }
)  # fmt: skip


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"commit_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


def test_upload_then_commit_moves_the_segment_and_writes_zk(store, tmp_path):
    name = LLCSegmentName.create("ev", 0, 0, NOW)
    store.put_segment_metadata(llc.new_consuming_segment("ev_REALTIME", name, 40, 1, 1000))
    store.update_ideal_state(
        "ev_REALTIME", lambda i: (i.segments.update({str(name): {"S1": "CONSUMING"}}), i)[1]
    )
    segment = MutableSegment(str(name), SCHEMA, CONFIG)
    segment.index(records_to_batch([{"k": f"v{i}", "ts": NOW - 1000 + i} for i in range(30)]))
    built = segment.build(tmp_path / "build")
    tar = pack_segment(built.path, tmp_path / "seg.tar.gz")
    deep_store = DeepStore(str(tmp_path / "deepstore"))

    fsm = fsm_from_zk(
        store,
        "ev_REALTIME",
        str(name),
        lambda i, o, loc: (
            finish_commit(store, CONFIG, deep_store, str(name), o, loc, "http://controller:9000")
            is not None
        ),
    )
    assert fsm.segment_consumed("S1", 70, proto.REASON_ROW_LIMIT).status == proto.COMMIT
    assert fsm.segment_commit_start("S1", 70).status == proto.COMMIT_CONTINUE
    with open(tar, "rb") as fh:
        uploaded = fsm.segment_upload("S1", 70, lambda: receive_upload(deep_store, str(name), fh))
    location = uploaded.segment_location
    assert uploaded.status == proto.UPLOAD_SUCCESS and f"/ev/{name}.tmp." in location
    assert fsm.segment_commit_end("S1", 70, location).status == proto.COMMIT_SUCCESS

    assert deep_store.exists("ev", str(name))
    assert not list((tmp_path / "deepstore" / "ev").glob("*.tmp.*"))
    done = store.segment_metadata("ev_REALTIME", str(name))
    assert done.extra[llc.STATUS] == "DONE" and done.extra[llc.END_OFFSET] == "70"
    assert done.total_docs == 30 and done.crc == str(built.metadata.crc)
    assert done.download_url == f"http://controller:9000/segments/ev/{name}"
    assert done.extra["segment.deep.store.url"].endswith(f"/deepstore/ev/{name}")
    assert (done.start_time, done.end_time) == (NOW - 1000, NOW - 971)
    nxt = LLCSegmentName.parse(
        next(s for s in store.segment_names("ev_REALTIME") if s != str(name))
    )
    assert (nxt.partition, nxt.sequence) == (0, 1)
    following = store.segment_metadata("ev_REALTIME", str(nxt))
    assert following.extra[llc.START_OFFSET] == "70"
    assert following.extra[llc.FLUSH_THRESHOLD_SIZE] == "1000"

    # a restarted controller's FSM for the committed segment: KEEP the same, DISCARD others
    again = fsm_from_zk(store, "ev_REALTIME", str(name), lambda *a: False)
    assert again.state is FsmState.COMMITTED
    assert again.segment_consumed("S2", 70).status == proto.KEEP
    assert again.segment_consumed("S3", 69).status == proto.DISCARD


def test_an_upload_outside_the_deep_store_is_refused(store, tmp_path):
    deep_store = DeepStore(str(tmp_path / "deepstore"))
    stray = tmp_path / "elsewhere.tar.gz"
    stray.write_bytes(orjson.dumps({}))
    traversal = f"{tmp_path}/deepstore/ev/../../elsewhere.tar.gz"  # the prefix looks right
    for location in (str(stray), traversal):
        with pytest.raises(ValueError, match="leaves the deep store"):
            finish_commit(store, CONFIG, deep_store, "ev__0__0__20260801T1200Z", 1, location,
                          "http://c:9000")  # fmt: skip
    assert stray.exists()  # not moved
    with open(stray, "rb") as fh, pytest.raises(ValueError, match="not an LLC segment name"):
        receive_upload(deep_store, "ev_123", fh)
