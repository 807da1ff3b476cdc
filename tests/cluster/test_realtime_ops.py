"""Force commit, the table's stream error and consumingSegmentsInfo's fan-out, on a real
ZooKeeper (no Kafka, no server processes: the servers' answers come from a local HTTP
server, and the stream from a metadata provider that fails as a missing topic does)."""

from __future__ import annotations

import http.server
import threading
import time
import uuid

import orjson
import pytest
from kazoo.client import KazooClient

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.consuming_info import collect_consuming_info
from cluster.logic.realtime.ensure_consuming import ensure_partitions_consuming
from cluster.logic.realtime.force_commit import (
    choose_segments,
    commit_in_batches,
    force_commit,
    force_commit_status,
)
from cluster.logic.realtime.stream_status import STREAM_ERROR, stream_error
from controller.errors import BadRequest, NotFound
from engine.clusterstate import ClusterStore, InstanceConfig, ResourceAssignment
from engine.clusterstate.records import FORCE_COMMIT_MESSAGE, FORCE_COMMIT_SEGMENTS
from engine.realtime.llc_name import LLCSegmentName
from engine.spi import TableConfig
from engine.stream.errors import PermanentStreamError

pytestmark = pytest.mark.integration
TABLE = "ev_REALTIME"
NOW = 1_785_585_600_000  # 2026-08-01T12:00Z
SEG = [f"ev__{p}__0__20260801T1200Z" for p in range(3)]


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"ops_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


def config(topic: str = "ev_topic") -> TableConfig:
    return TableConfig.from_json({
        "tableName": "ev", "tableType": "REALTIME",
        "segmentsConfig": {"replicasPerPartition": "1", "timeColumnName": "ts"},
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": topic,
            "stream.kafka.broker.list": "127.0.0.1:1",
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }},
    })  # fmt: skip


def consuming_table(store: ClusterStore) -> ResourceAssignment:
    """Three partitions: 0 and 1 CONSUMING (0 on two servers), 2 already ONLINE."""
    ideal = ResourceAssignment(TABLE)
    ideal.segments = {
        SEG[0]: {"Server_a_1": "CONSUMING", "Server_b_1": "CONSUMING"},
        SEG[1]: {"Server_b_1": "CONSUMING"},
        SEG[2]: {"Server_a_1": "ONLINE"},
    }
    store.put_ideal_state(ideal)
    for segment in SEG[:2]:
        name = LLCSegmentName.parse(segment)
        store.put_segment_metadata(
            llc.new_consuming_segment(TABLE, name, 0, 1, 100, now_ms=NOW, extra={})
        )
    return store.ideal_state(TABLE)


def messages(store: ClusterStore, server: str) -> list[list[str]]:
    return sorted(
        m.extra[FORCE_COMMIT_SEGMENTS].split(",")
        for m in store.messages(server)
        if m.sub_type == FORCE_COMMIT_MESSAGE
    )


def test_choose_segments(store):
    ideal = consuming_table(store)
    assert choose_segments(ideal) == SEG[:2]
    assert choose_segments(ideal, partitions="1") == [SEG[1]]
    assert choose_segments(ideal, segments=f" {SEG[0]} ,") == [SEG[0]]
    with pytest.raises(BadRequest, match="both partitions and segments"):
        choose_segments(ideal, partitions="0", segments=SEG[0])
    with pytest.raises(BadRequest, match="partition ids, got 'x'"):
        choose_segments(ideal, partitions="x")
    with pytest.raises(BadRequest, match=r"partition\(s\) 2, 7 of ev_REALTIME have no CONSUMING"):
        choose_segments(ideal, partitions="2,7")
    with pytest.raises(BadRequest, match=f"{SEG[2]} of ev_REALTIME are not CONSUMING"):
        choose_segments(ideal, segments=SEG[2])


def test_force_commit_job_and_status(store):
    consuming_table(store)
    answer = force_commit(store, TABLE)
    assert answer["forceCommitStatus"] == "SUCCESS" and answer["jobMetaZKWriteStatus"] == "SUCCESS"
    assert answer["forceCommittedSegments"] == SEG[:2]
    # one message per server, naming the segments it consumes
    assert messages(store, "Server_a_1") == [[SEG[0]]]
    assert messages(store, "Server_b_1") == [[SEG[0], SEG[1]]]
    job = answer["forceCommitJobId"]
    status = force_commit_status(store, job)
    assert status["jobType"] == "FORCE_COMMIT" and status["tableName"] == TABLE
    assert orjson.loads(status["segmentsForceCommitted"]) == SEG[:2]
    assert status["numberOfSegmentsYetToBeCommitted"] == 2
    meta = store.segment_metadata(TABLE, SEG[0])
    meta.extra[llc.STATUS] = llc.DONE
    store.put_segment_metadata(meta)
    status = force_commit_status(store, job)
    assert status["segmentsYetToBeCommitted"] == [SEG[1]]
    assert status["numberOfSegmentsYetToBeCommitted"] == 1
    assert int(status["submissionTimeMs"]) > 0
    with pytest.raises(NotFound):
        force_commit_status(store, "no-such-job")
    # the job is listed with the table's jobs
    from cluster.logic.controller_jobs import JOB_TYPES, table_jobs

    assert job in table_jobs(store, TABLE, list(JOB_TYPES))


def test_force_commit_in_batches_waits_for_each_batch(store):
    ideal = consuming_table(store)
    commit_in_batches(store, ideal, SEG[:2], batch_size=1, interval_s=0.05, timeout_s=30)
    deadline = time.monotonic() + 5
    while not messages(store, "Server_a_1") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert messages(store, "Server_a_1") == [[SEG[0]]]
    time.sleep(0.3)  # the first batch has not committed: the second is not sent
    assert messages(store, "Server_b_1") == [[SEG[0]]]
    meta = store.segment_metadata(TABLE, SEG[0])
    meta.extra[llc.STATUS] = llc.DONE
    store.put_segment_metadata(meta)
    deadline = time.monotonic() + 5
    while len(messages(store, "Server_b_1")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert messages(store, "Server_b_1") == [[SEG[0]], [SEG[1]]]
    meta = store.segment_metadata(TABLE, SEG[1])
    meta.extra[llc.STATUS] = llc.DONE
    store.put_segment_metadata(meta)
    time.sleep(0.3)  # the batch thread sees it and ends


class MissingTopic:
    def partition_ids(self):
        raise PermanentStreamError("topic 'ev_topic' does not exist")


class OnePartition:
    def partition_ids(self):
        return [0]

    def offset_for(self, partition, criteria=None):
        return 0


def test_missing_topic_is_recorded_and_cleared_by_validation(store):
    store.put_ideal_state(ResourceAssignment(TABLE))
    for attempt in range(2):  # retried: the first time it was seen is kept
        with pytest.raises(PermanentStreamError):
            ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, MissingTopic(),
                                        now_ms=NOW)  # fmt: skip
        error = stream_error(store.ideal_state(TABLE))
        if attempt == 0:
            first = error["firstSeenMs"]
    assert error["firstSeenMs"] == first and error["lastCheckedMs"] >= first
    assert error["topic"] == "ev_topic" and error["bootstrapServers"] == "127.0.0.1:1"
    assert "cannot read topic 'ev_topic' from bootstrap servers 127.0.0.1:1" in error["message"]
    assert "does not exist" in error["error"]
    assert store.ideal_state(TABLE).segments == {}
    # the topic appears: the validation creates the segment and clears the error
    actions = ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, OnePartition(),
                                          now_ms=NOW)  # fmt: skip
    assert actions == ["partition 0 is new: created ev__0__0__20260801T1200Z"]
    assert STREAM_ERROR not in store.ideal_state(TABLE).extra_fields


def test_paused_commit_gets_its_successor_at_once_on_resume(store):
    """A DONE segment ONLINE on all its replicas finished its commit: no 5-minute wait."""
    from cluster.logic.realtime import pause

    store.put_ideal_state(ResourceAssignment(TABLE, segments={SEG[0]: {"Server_a_1": "ONLINE"}}))
    meta = llc.new_consuming_segment(TABLE, LLCSegmentName.parse(SEG[0]), 0, 1, 100, now_ms=NOW,
                                     extra={})  # fmt: skip
    meta.extra[llc.STATUS] = llc.DONE
    meta.extra[llc.END_OFFSET] = "42"
    store.put_segment_metadata(meta)
    pause.pause_consumption(store, TABLE)
    assert ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, OnePartition()) == []
    pause.resume_consumption(store, TABLE)
    actions = ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, OnePartition(),
                                          now_ms=NOW)  # fmt: skip
    assert actions == [f"{SEG[0]} is DONE without a successor: created ev__0__1__20260801T1200Z"]
    successor = store.segment_metadata(TABLE, "ev__0__1__20260801T1200Z")
    assert successor.extra[llc.START_OFFSET] == "42"


def test_a_commit_in_flight_is_not_raced(store):
    """DONE but still CONSUMING in the ideal state: commit step 3 may be on its way, so the
    repair waits for max.segment.completion.time.millis."""
    store.put_ideal_state(ResourceAssignment(TABLE, segments={SEG[0]: {"Server_a_1": "CONSUMING"}}))
    meta = llc.new_consuming_segment(TABLE, LLCSegmentName.parse(SEG[0]), 0, 1, 100, now_ms=NOW,
                                     extra={})  # fmt: skip
    meta.extra.update({llc.STATUS: llc.DONE, llc.END_OFFSET: "42"})
    store.put_segment_metadata(meta)
    assert ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, OnePartition()) == []
    actions = ensure_partitions_consuming(store, config(), ["Server_a_1"], 1, OnePartition(),
                                          now_ms=NOW, max_completion_ms=0)  # fmt: skip
    assert actions == [f"{SEG[0]} is DONE without a successor: created ev__0__1__20260801T1200Z"]
    assert store.ideal_state(TABLE).segments[SEG[0]] == {"Server_a_1": "ONLINE"}


class _Answer(http.server.BaseHTTPRequestHandler):
    body = b"[]"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def test_consuming_info_from_servers_one_of_which_is_down(store):
    consuming_table(store)
    info = {
        "segmentName": SEG[1], "consumerState": "CONSUMING", "lastConsumedTimestamp": 5,
        "partitionToOffsetMap": {"1": "7"},
        "partitionOffsetInfo": {"currentOffsetsMap": {"1": "7"},
                                "latestUpstreamOffsetMap": {"1": "9"},
                                "recordsLagMap": {"1": "2"}, "availabilityLagMsMap": {"1": "30"}},
        "rowsWithErrors": 0,
    }  # fmt: skip
    handler = type("Answer", (_Answer,), {"body": orjson.dumps([info])})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store.put_instance_config(InstanceConfig("Server_b_1", "127.0.0.1", 1,
                                                 admin_port=server.server_address[1]))  # fmt: skip
        # Server_a_1's admin port refuses connections
        store.put_instance_config(InstanceConfig("Server_a_1", "127.0.0.1", 1, admin_port=1))
        merged = collect_consuming_info(store, TABLE, timeout_s=2)
    finally:
        server.shutdown()
        server.server_close()
    assert merged["serversFailingToRespond"] == 1
    assert merged["serversUnparsableRespond"] == 0
    assert list(merged["serverErrors"]) == ["Server_a_1"]
    assert merged["_segmentToConsumingInfoMap"][SEG[0]] == []
    entry = merged["_segmentToConsumingInfoMap"][SEG[1]][0]
    assert entry["serverName"] == "Server_b_1"
    assert entry["partitionOffsetInfo"]["recordsLagMap"] == {"1": "2"}
    assert "streamIngestionError" not in merged
