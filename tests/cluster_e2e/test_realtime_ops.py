"""Operating a REALTIME table through the controller's REST API, end to end: a controller,
two servers and a broker as separate processes, on the real ZooKeeper and
Kafka.

consumingSegmentsInfo is gathered from the servers by the controller; pausing commits the
consuming segments and creates no successors; resuming continues where consumption stopped
(or at the latest offset) with no row lost or counted twice; force commit is a job whose
status reaches 0; a table whose topic does not exist says so; bad input is a 400 or 404."""

from __future__ import annotations

import signal
import time
import uuid

import orjson
import pytest

from tests.cluster_e2e.realtime_helpers import (
    SCHEMA,
    TABLE,
    Stream,
    create_table,
    create_topic,
    ideal_state,
    new_topic,
    wait_consuming_segments,
    wait_totals,
    wait_until,
)

pytestmark = pytest.mark.integration


def call(cluster, method: str, path: str, status: int = 200, **kwargs) -> dict:
    response = cluster.controller(method, path, **kwargs)
    assert response.status_code == status, (path, response.status_code, response.text)
    return response.json()


def consuming(cluster) -> list[str]:
    return sorted(s for s, m in ideal_state(cluster).items() if "CONSUMING" in m.values())


def test_pause_resume_and_force_commit(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    stream.produce(60)  # 30 per partition, below the 100-row target
    create_table(cluster, kafka, topic)
    first = sorted(wait_consuming_segments(cluster, 2))
    wait_totals(cluster, stream.count, stream.total)

    # consumingSegmentsInfo, gathered from both servers by the controller
    info = call(cluster, "GET", f"/tables/{TABLE}/consumingSegmentsInfo")
    assert (info["serversFailingToRespond"], info["serversUnparsableRespond"]) == (0, 0)
    assert sorted(info["_segmentToConsumingInfoMap"]) == first
    for segment, entries in info["_segmentToConsumingInfoMap"].items():
        partition = segment.split("__")[1]
        assert len(entries) == 1 and entries[0]["serverName"] in cluster.servers
        assert entries[0]["consumerState"] == "CONSUMING"
        assert entries[0]["partitionOffsetInfo"]["currentOffsetsMap"] == {partition: "30"}
    assert call(cluster, "GET", f"/tables/{TABLE}_REALTIME/pauseStatus")["pauseFlag"] is False

    # pause: both consuming segments commit (30 rows each) and get no successor
    paused = call(cluster, "POST", f"/tables/{TABLE}/pauseConsumption",
                  params={"comment": "maintenance"})  # fmt: skip
    assert paused["pauseFlag"] is True and paused["reasonCode"] == "ADMINISTRATIVE"
    assert paused["consumingSegments"] == first and paused["comment"] == "maintenance"
    wait_until(lambda: call(cluster, "GET", f"/tables/{TABLE}/pauseStatus")["consumingSegments"]
               == [], "the consuming segments to commit")  # fmt: skip
    status = call(cluster, "GET", f"/tables/{TABLE}/pauseStatus")
    assert status["pauseFlag"] is True and status["comment"] == "maintenance"
    metadata = call(cluster, "GET", f"/segments/{TABLE}_REALTIME/zkmetadata")
    for segment in first:
        assert metadata[segment]["segment.realtime.status"] == "DONE"
        assert metadata[segment]["segment.realtime.endOffset"] == "30"
    stream.produce(40)  # produced while paused: not consumed yet
    time.sleep(2.0)
    assert consuming(cluster) == []
    assert call(cluster, "GET", f"/tables/{TABLE}/consumingSegmentsInfo")[
        "_segmentToConsumingInfoMap"] == {}  # fmt: skip
    count = cluster.query(f"SELECT COUNT(*) FROM {TABLE}")["resultTable"]["rows"][0][0]
    assert count == 60

    # resume where each partition stopped: every row once
    resumed = call(cluster, "POST", f"/tables/{TABLE}/resumeConsumption")
    assert resumed["pauseFlag"] is False
    assert [s.split("__")[1:3] for s in resumed["consumingSegments"]] == [["0", "1"], ["1", "1"]]
    wait_totals(cluster, stream.count, stream.total)
    stream.produce(20)
    wait_totals(cluster, stream.count, stream.total)  # 120: 60 per partition

    # force-commit partition 0 only
    job = call(cluster, "POST", f"/tables/{TABLE}/forceCommit", params={"partitions": "0"})
    assert job["forceCommitStatus"] == "SUCCESS"
    assert [s.split("__")[1:3] for s in job["forceCommittedSegments"]] == [["0", "1"]]
    job_id = job["forceCommitJobId"]
    done = wait_until(lambda: (s := call(cluster, "GET", f"/tables/forceCommitStatus/{job_id}"))
                      ["numberOfSegmentsYetToBeCommitted"] == 0 and s, "the force commit")  # fmt: skip
    assert done["jobType"] == "FORCE_COMMIT" and done["tableName"] == f"{TABLE}_REALTIME"
    assert orjson.loads(done["segmentsForceCommitted"]) == job["forceCommittedSegments"]
    assert done["segmentsYetToBeCommitted"] == []
    wait_until(lambda: [s.split("__")[1:3] for s in consuming(cluster)] == [["0", "2"], ["1", "1"]],
               "partition 0's next consuming segment")  # fmt: skip
    metadata = call(cluster, "GET", f"/segments/{TABLE}_REALTIME/zkmetadata")
    assert metadata[job["forceCommittedSegments"][0]]["segment.realtime.endOffset"] == "60"
    stream.produce(20)
    wait_totals(cluster, stream.count, stream.total)
    jobs = call(cluster, "GET", f"/table/{TABLE}/jobs", params={"jobTypes": "FORCE_COMMIT"})
    assert job_id in jobs

    # force-commit everything, in batches of one segment
    job = call(cluster, "POST", f"/tables/{TABLE}/forceCommit",
               params={"batchSize": "1", "batchStatusCheckIntervalSec": "1"})  # fmt: skip
    assert len(job["forceCommittedSegments"]) == 2
    wait_until(lambda: call(cluster, "GET", f"/tables/forceCommitStatus/{job['forceCommitJobId']}")
               ["numberOfSegmentsYetToBeCommitted"] == 0, "the batched force commit")  # fmt: skip
    wait_until(lambda: [s.split("__")[1:3] for s in consuming(cluster)] == [["0", "3"], ["1", "2"]],
               "the next consuming segments")  # fmt: skip
    stream.produce(20)
    wait_totals(cluster, stream.count, stream.total)

    # pause again, and resume from the latest offset: what was produced meanwhile is skipped
    call(cluster, "POST", f"/tables/{TABLE}/pauseConsumption")
    wait_until(lambda: consuming(cluster) == [], "the second pause")
    counted, summed = stream.count, stream.total
    stream.produce(6)
    resumed = call(cluster, "POST", f"/tables/{TABLE}/resumeConsumption",
                   params={"consumeFrom": "LARGEST"})  # fmt: skip
    assert len(resumed["consumingSegments"]) == 2
    time.sleep(2.0)
    wait_totals(cluster, counted, summed)
    before = stream.count
    stream.produce(10)
    wait_totals(cluster, counted + stream.count - before, summed + sum(
        i * 7 + 3 for i in range(before, stream.count)))  # fmt: skip


def test_bad_input(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = new_topic(kafka)
    create_table(cluster, kafka, topic)
    wait_consuming_segments(cluster, 2)
    # an OFFLINE-only table and an unknown one
    assert cluster.controller("POST", "/schemas", json={**SCHEMA, "schemaName": "batch"}).ok
    offline = {"tableName": "batch", "tableType": "OFFLINE",
               "segmentsConfig": {"timeColumnName": "ts", "replication": "1"}, "tenants": {},
               "tableIndexConfig": {}, "metadata": {}}  # fmt: skip
    assert cluster.controller("POST", "/tables", json=offline).ok
    for method, path in [("GET", "consumingSegmentsInfo"), ("GET", "pauseStatus"),
                         ("POST", "pauseConsumption"), ("POST", "resumeConsumption"),
                         ("POST", "forceCommit")]:  # fmt: skip
        missing = call(cluster, method, f"/tables/nosuch/{path}", 404)
        assert missing == {"code": 404, "error": "Table nosuch_REALTIME not found!"}
        error = call(cluster, method, f"/tables/batch/{path}", 400)["error"]
        assert "REALTIME tables only" in error and "batch_OFFLINE" in error
        call(cluster, method, f"/tables/{TABLE}_OFFLINE/{path}", 400)
    error = call(cluster, "POST", f"/tables/{TABLE}/resumeConsumption", 400,
                 params={"consumeFrom": "yesterday"})["error"]  # fmt: skip
    assert "consumeFrom" in error and "lastConsumed, smallest, largest" in error
    error = call(cluster, "POST", f"/tables/{TABLE}/forceCommit", 400,
                 params={"partitions": "0", "segments": "x"})["error"]  # fmt: skip
    assert "both partitions and segments" in error
    error = call(cluster, "POST", f"/tables/{TABLE}/forceCommit", 400,
                 params={"partitions": "5"})["error"]  # fmt: skip
    assert "partition(s) 5" in error
    call(cluster, "POST", f"/tables/{TABLE}/forceCommit", 400, params={"batchSize": "0"})
    call(cluster, "GET", "/tables/forceCommitStatus/no-such-job", 404)
    # nothing above paused the table or committed anything
    assert call(cluster, "GET", f"/tables/{TABLE}/pauseStatus")["pauseFlag"] is False
    assert len(consuming(cluster)) == 2
    # a disabled table is not paused
    call(cluster, "PUT", f"/tables/{TABLE}/state", params={"state": "disable", "type": "REALTIME"})
    call(cluster, "POST", f"/tables/{TABLE}/pauseConsumption", 400)


def test_missing_topic_and_a_server_that_does_not_answer(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = f"clicks_{uuid.uuid4().hex[:8]}"
    create_table(cluster, kafka, topic)

    def stream_error():
        return call(cluster, "GET", f"/tables/{TABLE}/consumingSegmentsInfo").get(
            "streamIngestionError"
        )

    error = wait_until(stream_error, "the table's stream error", timeout_s=30)
    assert error["topic"] == topic and error["bootstrapServers"] == kafka.bootstrap_servers
    assert (
        f"cannot read topic '{topic}' from bootstrap servers {kafka.bootstrap_servers}"
        in (error["message"])
    )
    assert "does not exist" in error["error"]
    assert ideal_state(cluster) == {}
    # the validation manager retries: still missing, still reported, never a 500
    run = call(cluster, "GET", "/periodictask/run",
               params={"taskname": "RealtimeSegmentValidationManager", "tableName": TABLE})  # fmt: skip
    assert "does not exist" in str(run["taskReport"])
    assert stream_error()["lastCheckedMs"] >= error["lastCheckedMs"]
    assert call(cluster, "GET", f"/tables/{TABLE}/pauseStatus")["pauseFlag"] is False

    create_topic(kafka.bootstrap_servers, topic)
    stream = Stream(kafka.bootstrap_servers, topic)
    stream.produce(20)
    call(cluster, "GET", "/periodictask/run",
         params={"taskname": "RealtimeSegmentValidationManager", "tableName": TABLE})  # fmt: skip
    assert stream_error() is None
    wait_consuming_segments(cluster, 2)
    wait_totals(cluster, stream.count, stream.total)

    # a server that is down is reported, not a 500
    server = next(iter(cluster.servers.values()))
    server.popen.send_signal(signal.SIGKILL)
    server.popen.wait(10)
    info = call(cluster, "GET", f"/tables/{TABLE}/consumingSegmentsInfo")
    assert info["serversFailingToRespond"] == 1
    assert list(info["serverErrors"]) == [next(iter(cluster.servers))]
    answered = [e for entries in info["_segmentToConsumingInfoMap"].values() for e in entries]
    assert len(answered) == 1 and answered[0]["consumerState"] == "CONSUMING"
