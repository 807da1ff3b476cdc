"""Rebalance after adding a server: dry run, then a no-downtime job that adds new replicas
before dropping old ones, tracked through /rebalanceStatus."""

from __future__ import annotations

import copy
import threading
import time

import pytest

from engine.clusterstate import SERVING_STATES, compute_external_view
from tests.cluster.conftest import register_servers, upload

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def loaded_table(api, store, airline_schema, airline_offline_config, airline_segments, fake_servers,
                 cluster_settings):  # fmt: skip
    cluster_settings.REBALANCE_CHECK_INTERVAL_S = 0.1
    cluster_settings.REBALANCE_STABILIZATION_TIMEOUT_S = 30
    servers = register_servers(api, 3)
    config = copy.deepcopy(airline_offline_config)
    config["segmentsConfig"]["replication"] = "2"
    api.post("/schemas", airline_schema, format="json")
    api.post("/tables", config, format="json")
    followers = {ident: fake_servers(ident).follow() for ident in servers}
    for _, tar in airline_segments:
        assert upload(api, tar).status_code == 200
    deadline = time.time() + 10
    while time.time() < deadline:
        store.refresh_external_views()
        view = store.external_view("airlineStats_OFFLINE")
        if view and view.segments == store.ideal_state("airlineStats_OFFLINE").segments:
            break
        time.sleep(0.1)
    return servers, followers


def _load(segments: dict) -> dict[str, int]:
    load: dict[str, int] = {}
    for replicas in segments.values():
        for instance in replicas:
            load[instance] = load.get(instance, 0) + 1
    return load


def test_rebalance_after_adding_a_server(api, store, loaded_table, fake_servers):
    _servers, _ = loaded_table
    before = store.ideal_state("airlineStats_OFFLINE").segments
    assert api.post("/tables/airlineStats/rebalance?type=OFFLINE").json()["status"] == "NO_OP"

    (new_server,) = register_servers(api, 1, first_port=8101)
    fake_servers(new_server).follow()

    dry = api.post("/tables/airlineStats/rebalance?type=OFFLINE&dryRun=true").json()
    assert dry["status"] == "DONE" and dry["description"] == "Dry-run mode"
    target = dry["segmentAssignment"]
    assert sorted(_load(target).values()) == [2, 2, 2, 2]  # 8 replicas over 4 servers
    assert all(len(set(r)) == 2 for r in target.values())
    assert store.ideal_state("airlineStats_OFFLINE").segments == before  # dry run: no change
    moved = dry["rebalanceSummaryResult"]["numReplicasToAdd"]
    assert moved == 2  # only what the new server takes over moves

    # watch the ideal state during the job: no segment may ever have fewer serving replicas
    low_water = {"min": 2}
    stop = threading.Event()

    def watch():  # what the servers really serve, straight from their current states
        while not stop.is_set():
            view = compute_external_view("airlineStats_OFFLINE", store.live_current_states())
            for segment in before:
                online = sum(1 for s in view.segments.get(segment, {}).values()
                             if s in SERVING_STATES)  # fmt: skip
                low_water["min"] = min(low_water["min"], online)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = api.post("/tables/airlineStats/rebalance?type=OFFLINE").json()
    assert started["status"] == "IN_PROGRESS"
    job_id = started["jobId"]
    deadline = time.time() + 30
    status = {}
    while time.time() < deadline:
        status = api.get(f"/rebalanceStatus/{job_id}").json()
        if status["tableRebalanceProgressStats"]["status"] != "IN_PROGRESS":
            break
        time.sleep(0.1)
    stop.set()
    watcher.join()
    assert status["tableRebalanceProgressStats"]["status"] == "DONE", status
    after = store.ideal_state("airlineStats_OFFLINE").segments
    assert after == target
    assert new_server in _load(after)
    assert low_water["min"] == 2  # new replicas came ONLINE before old ones were dropped
    # the servers drop the old replicas after the job's last ideal-state step; the external
    # view follows them within a few of their polls
    deadline = time.time() + 15
    while True:
        store.refresh_external_views()
        view = store.external_view("airlineStats_OFFLINE").segments
        if view == after or time.time() > deadline:
            break
        time.sleep(0.1)
    assert view == after
    jobs = api.get("/table/airlineStats/jobs?type=OFFLINE&jobTypes=TABLE_REBALANCE").json()
    assert job_id in jobs
    assert api.get("/rebalanceStatus/no-such-job").status_code == 404


def test_rebalance_waits_for_new_replicas_and_can_be_cancelled(api, store, loaded_table):
    _servers, _ = loaded_table
    before = store.ideal_state("airlineStats_OFFLINE").segments
    # a registered server that never loads anything: the job must not drop old replicas
    (idle,) = register_servers(api, 1, first_port=8201)
    started = api.post("/tables/airlineStats/rebalance?type=OFFLINE").json()
    time.sleep(1.0)
    status = api.get(f"/rebalanceStatus/{started['jobId']}").json()
    assert status["tableRebalanceProgressStats"]["status"] == "IN_PROGRESS"
    during = store.ideal_state("airlineStats_OFFLINE").segments
    for segment, replicas in before.items():
        assert set(replicas) <= set(during[segment])  # old replicas still there
    assert idle in _load(during)
    again = api.post("/tables/airlineStats/rebalance?type=OFFLINE")
    assert again.status_code == 409 and started["jobId"] in again.json()["error"]
    # the job runs in this (test) process, whose controller id is not live: the reconcile
    # task marks such jobs FAILED, as after a controller restart
    body = api.get("/periodictask/run?taskname=ClusterStateReconciler").json()["taskReport"]
    assert body["failedOrphanedRebalanceJobs"] == [started["jobId"]]
    status = api.get(f"/rebalanceStatus/{started['jobId']}").json()
    assert status["tableRebalanceProgressStats"]["status"] == "FAILED"
    started = api.post("/tables/airlineStats/rebalance?type=OFFLINE").json()
    cancelled = api.delete("/tables/airlineStats/rebalance?type=OFFLINE").json()
    assert cancelled == [started["jobId"]]
    time.sleep(0.5)
    status = api.get(f"/rebalanceStatus/{started['jobId']}").json()
    assert status["tableRebalanceProgressStats"]["status"] == "CANCELLED"


def test_rebalance_needs_enough_servers(api, store, loaded_table):
    servers, _followers = loaded_table
    for ident in servers[:2]:
        assert api.put(f"/instances/{ident}/state?state=disable").status_code == 200
    response = api.post("/tables/airlineStats/rebalance?type=OFFLINE&dryRun=true")
    assert response.status_code == 400
    assert "replication 2" in response.json()["error"]
    assert api.post("/tables/nosuch/rebalance").status_code == 404


def test_include_consuming_false_keeps_consuming_segments(api, store, loaded_table):
    consuming = sorted(store.ideal_state("airlineStats_OFFLINE").segments)[0]

    def mark(ideal):
        ideal.segments[consuming] = dict.fromkeys(ideal.segments[consuming], "CONSUMING")
        return ideal

    store.update_ideal_state("airlineStats_OFFLINE", mark)
    before = store.ideal_state("airlineStats_OFFLINE").segments[consuming]
    register_servers(api, 3, first_port=8301)
    keep = api.post("/tables/airlineStats/rebalance?dryRun=true&includeConsuming=false").json()
    assert keep["segmentAssignment"][consuming] == before
    moved = api.post("/tables/airlineStats/rebalance?dryRun=true").json()["segmentAssignment"]
    assert moved[consuming] != before  # it would move, and keeps its state when it does
    assert set(moved[consuming].values()) == {"CONSUMING"}
    assert sum(len(r) for r in moved.values()) == 8
