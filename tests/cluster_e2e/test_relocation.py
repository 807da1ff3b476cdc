"""Completed-segment relocation end to end: a REALTIME table whose
``tenants.tagOverrideConfig`` names the tag of two consuming servers (``realtimeConsuming``)
and of a third server (``realtimeCompleted``), on a 2-partition topic, with a controller and
a broker, all processes.

Committed segments stay on the consuming servers (as in Pinot) until the SegmentRelocator
runs; it then moves every DONE segment to the completed server, make-before-break, while
the CONSUMING segments stay where they are. A query loop through the broker asks COUNT(*)
and SUM during the move: every answer equals what was produced, and none has an error."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.cluster_e2e.realtime_helpers import (
    SCHEMA,
    TABLE,
    Stream,
    ideal_state,
    new_topic,
    run_periodic_task,
    table_config,
    wait_totals,
)

pytestmark = pytest.mark.integration
CONSUMING_TAG = "consumingTenant_REALTIME"
COMPLETED_TAG = "completedTenant_OFFLINE"


@pytest.fixture
def relocation_cluster(zookeeper, tmp_path):
    """Three servers: the first two re-tagged CONSUMING_TAG, the third COMPLETED_TAG; none
    keeps DefaultTenant's tags, so the table's servers come from its tag overrides only."""
    running = start_cluster(zookeeper.address, tmp_path, servers=3)
    try:
        *consuming, completed = sorted(running.servers)
        for server, tag in [(s, CONSUMING_TAG) for s in consuming] + [(completed, COMPLETED_TAG)]:
            response = running.controller("PUT", f"/instances/{server}/updateTags",
                                          params={"tags": tag})  # fmt: skip
            assert response.ok, response.text
        yield running, consuming, completed
    finally:
        stop_cluster(running)


class QueryLoop(threading.Thread):
    """Asks COUNT(*) and SUM(n) until stopped; keeps every answer: its row, or its
    exceptions."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.answers: list = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                answer = self.cluster.query(f"SELECT COUNT(*), SUM(n) FROM {TABLE}")
                self.answers.append(answer.get("exceptions") or answer["resultTable"]["rows"][0])
            except (requests.RequestException, AssertionError, KeyError) as exc:
                self.answers.append(repr(exc))
            time.sleep(0.05)


def split(assignment: dict) -> tuple[dict, dict]:
    """(completed segments, consuming segments) of an ideal state or external view."""
    consuming = {s: m for s, m in assignment.items() if "CONSUMING" in m.values()}
    return {s: m for s, m in assignment.items() if s not in consuming}, consuming


def wait_completed(cluster, count: int, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = ideal_state(cluster)
        completed, consuming = split(current)
        if len(completed) == count and len(consuming) == 2:
            return current
        time.sleep(0.3)
    raise AssertionError(f"expected {count} completed segments: {current}")


def relocate(cluster) -> dict:
    return run_periodic_task(cluster, "SegmentRelocator")[f"{TABLE}_REALTIME"]


def wait_job(cluster, job_id: str, timeout_s: float = 90) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = cluster.controller("GET", f"/rebalanceStatus/{job_id}").json()
        stats = status["tableRebalanceProgressStats"]
        if stats["status"] != "IN_PROGRESS":
            return stats
        time.sleep(0.3)
    raise AssertionError(f"relocation job {job_id} did not finish: {status}")


def test_completed_segments_move_while_queries_stay_exact(relocation_cluster, kafka):
    cluster, consuming_servers, completed_server = relocation_cluster
    assert "SegmentRelocator" in cluster.controller("GET", "/periodictask/names").json()
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    config = table_config(kafka.bootstrap_servers, topic)
    config["tenants"] = {"tagOverrideConfig": {"realtimeConsuming": CONSUMING_TAG,
                                               "realtimeCompleted": COMPLETED_TAG}}  # fmt: skip
    assert cluster.controller("POST", "/schemas", json=SCHEMA).ok
    response = cluster.controller("POST", "/tables", json=config)
    assert response.ok, response.text
    assert "tagOverrideConfig" not in str(response.json().get("warnings")), response.json()

    stream.produce(450)  # 225 per partition: two 100-row commits each, 25 consuming
    wait_totals(cluster, stream.count, stream.total)
    completed, consuming = split(wait_completed(cluster, 4))
    # a committed segment stays where it was consumed until the relocator runs
    assert {i for m in completed.values() for i in m} <= set(consuming_servers), completed
    assert {i for m in consuming.values() for i in m} == set(consuming_servers), consuming

    loop = QueryLoop(cluster)
    loop.start()
    try:
        report = relocate(cluster)
        assert report["status"] == "IN_PROGRESS" and report["segmentsToMove"] == 4, report
        stats = wait_job(cluster, report["jobId"])
        assert stats["status"] == "DONE", stats
        time.sleep(4)  # on past the old servers' drain (3 s): they no longer get queries
    finally:
        loop.stop.set()
        loop.join(30)
    # Every answer is exact, with no error at all: the old server keeps serving a segment
    # the ideal state took away until the brokers saw the external view drop that replica
    # (SPRIG_SERVER_DROP_DRAIN_S), and the new one serves it before the old one lets go.
    assert len(loop.answers) > 20, loop.answers
    wrong = [a for a in loop.answers if a != [stream.count, stream.total]]
    assert not wrong, (len(wrong), len(loop.answers), wrong[:5])

    after_completed, after_consuming = split(ideal_state(cluster))
    assert sorted(after_completed) == sorted(completed)
    assert all(m == {completed_server: "ONLINE"} for m in after_completed.values())
    assert after_consuming == consuming  # untouched
    view = cluster.controller("GET", f"/tables/{TABLE}/externalview").json()["REALTIME"]
    assert {s: view[s] for s in after_completed} == after_completed
    assert relocate(cluster) == {"status": "NO_OP", "segmentsToMove": 0}
    # a table rebalance keeps them there (it does not pull them back to consuming servers)
    response = cluster.controller("POST", f"/tables/{TABLE}/rebalance",
                                  params={"type": "REALTIME", "dryRun": "true"})  # fmt: skip
    assert response.ok and response.json()["status"] == "NO_OP", response.text

    # the next commits land on the consuming servers again; the next run moves them too
    stream.produce(400)  # 425 per partition: two more commits each
    wait_totals(cluster, stream.count, stream.total)
    completed, _ = split(wait_completed(cluster, 8))
    fresh = {s: m for s, m in completed.items() if s not in after_completed}
    assert len(fresh) == 4 and all(set(m) <= set(consuming_servers) for m in fresh.values())
    report = relocate(cluster)
    assert report["segmentsToMove"] == 4, report
    assert wait_job(cluster, report["jobId"])["status"] == "DONE"
    completed, consuming = split(ideal_state(cluster))
    assert all(m == {completed_server: "ONLINE"} for m in completed.values()), completed
    assert {i for m in consuming.values() for i in m} == set(consuming_servers)
    wait_totals(cluster, stream.count, stream.total)


def test_too_few_completed_servers_is_reported(relocation_cluster, kafka):
    cluster, _, _ = relocation_cluster
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    config = table_config(kafka.bootstrap_servers, topic)
    config["tenants"] = {"tagOverrideConfig": {"realtimeConsuming": CONSUMING_TAG,
                                               "realtimeCompleted": "nobody_OFFLINE"}}  # fmt: skip
    assert cluster.controller("POST", "/schemas", json=SCHEMA).ok
    assert cluster.controller("POST", "/tables", json=config).ok
    stream.produce(250)  # one commit per partition
    wait_totals(cluster, stream.count, stream.total)
    before = wait_completed(cluster, 2)
    report = relocate(cluster)
    assert report["status"] == "FAILED" and "'nobody_OFFLINE'" in report["reason"], report
    assert ideal_state(cluster) == before  # nothing moved
    wait_totals(cluster, stream.count, stream.total)
