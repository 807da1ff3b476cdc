"""Periodic tasks: RetentionManager, SegmentStatusChecker (report and /metrics) and the
reconcile task, listed and run on demand through /periodictask."""

from __future__ import annotations

import copy
import time

import pytest

from cluster.logic.apply_retention import apply_retention
from cluster.models import TableConfig
from cluster.periodic import PeriodicTask, register, task_names
from engine.clusterstate import SegmentState
from engine.common.clock import now_ms
from tests.cluster.conftest import register_servers, upload

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def table(api, airline_schema, airline_offline_config):
    register_servers(api, 2)
    config = copy.deepcopy(airline_offline_config)
    config["segmentsConfig"].update(replication="2", retentionTimeUnit="DAYS",
                                    retentionTimeValue="365")  # fmt: skip
    api.post("/schemas", airline_schema, format="json")
    assert api.post("/tables", config, format="json").status_code == 200


def test_periodic_task_names_and_unknown_task(api, cluster_settings):
    names = api.get("/periodictask/names").json()
    assert names[:3] == ["RetentionManager", "SegmentStatusChecker", "ClusterStateReconciler"]
    assert {"PinotTaskManager", "TaskMetricsEmitter"} <= set(names)
    response = api.get("/periodictask/run?taskname=NoSuchTask")
    assert response.status_code == 404
    assert response.json()["error"].startswith("Periodic task 'NoSuchTask' not found.")
    assert "RetentionManager" in response.json()["error"]
    assert api.get("/periodictask/run").status_code == 400  # taskname is required


def test_registry_is_extensible_and_every_run_is_recorded(api, store):
    seen = []

    def run(store, rows):
        seen.append(len(rows))
        if len(seen) == 2:
            raise RuntimeError("second run breaks")
        return {"ok": 1}

    register(PeriodicTask("TestOnlyTask", run, "-1s", "a test task"))
    try:
        assert "TestOnlyTask" in task_names()
        before = now_ms()
        body = api.get("/periodictask/run?taskname=TestOnlyTask").json()
        assert body["isSuccessful"] is True and body["taskReport"] == {"ok": 1}
        assert body["taskId"].startswith("api-") and len(body["taskId"]) == 12
        assert seen == [0]
        (status,) = [s for s in api.get("/periodictask/status").json()
                     if s["taskName"] == "TestOnlyTask"]  # fmt: skip
        assert status["lastRunTimeMs"] >= before and status["lastRunDurationMs"] >= 0
        assert status["lastRunSuccessful"] is True and status["numberOfRuns"] == 1
        assert status["frequencySeconds"] is None and status["frequency"] == "-1s"
        # a failing run answers isSuccessful false and is recorded with its error
        body = api.get("/periodictask/run?taskname=TestOnlyTask").json()
        assert body["isSuccessful"] is False and "second run breaks" in body["error"]
        (status,) = [s for s in api.get("/periodictask/status").json()
                     if s["taskName"] == "TestOnlyTask"]  # fmt: skip
        assert status["lastRunSuccessful"] is False and status["numberOfRuns"] == 2
        assert status["lastRunError"] == "RuntimeError: second run breaks"
    finally:
        from cluster.periodic import registry

        registry._tasks.pop("TestOnlyTask", None)


def test_status_lists_every_task_with_its_frequency(api, cluster_settings):
    status = {s["taskName"]: s for s in api.get("/periodictask/status").json()}
    assert status["RetentionManager"]["frequencySeconds"] == 6 * 3600
    assert status["TaskMetricsEmitter"]["frequencySeconds"] == 300
    assert status["PinotTaskManager"]["frequencySeconds"] is None  # off unless configured
    assert status["SegmentStatusChecker"]["numberOfRuns"] == 0
    api.get("/periodictask/run?taskname=TaskMetricsEmitter")
    status = {s["taskName"]: s for s in api.get("/periodictask/status").json()}
    assert status["TaskMetricsEmitter"]["numberOfRuns"] == 1


def test_retention_deletes_segments_older_than_retention(api, store, table, airline_segments,
                                                         cluster_settings):  # fmt: skip
    for _, tar in airline_segments:
        upload(api, tar)
    names = sorted(n for n, _ in airline_segments)  # end times are days 16071.. (Jan 2014)
    row = TableConfig.objects.get(table_name="airlineStats")

    def at_day(day: float) -> int:
        return int(day * 86_400_000)

    # 365 days after the second segment's end: only the first two are older than retention
    second_end = store.segment_metadata("airlineStats_OFFLINE", names[1]).end_time
    report = apply_retention(store, [row], now=at_day(second_end + 365) + at_day(0.5))
    assert sorted(report["deletedSegments"]["airlineStats_OFFLINE"]) == names[:1] + names[1:2]
    assert sorted(store.ideal_state("airlineStats_OFFLINE").segments) == names[2:]
    assert store.segment_names("airlineStats_OFFLINE") == names[2:]

    # through the API, with today's clock: everything from 2014 is expired
    body = api.get(
        "/periodictask/run?taskname=RetentionManager&tableName=airlineStats&type=OFFLINE"
    )
    assert body.status_code == 200
    assert sorted(body.json()["taskReport"]["deletedSegments"]["airlineStats_OFFLINE"]) == names[2:]
    assert store.segment_names("airlineStats_OFFLINE") == []

    # the kept copies in Deleted_Segments are purged after DELETED_SEGMENTS_RETENTION
    cluster_settings.DELETED_SEGMENTS_RETENTION = "1ms"
    time.sleep(0.01)
    report = apply_retention(store, [row])
    assert report["purgedDeletedSegmentFiles"] == len(names)


def test_table_without_retention_keeps_everything(api, store, airline_schema,
                                                 airline_offline_config, airline_segments):  # fmt: skip
    register_servers(api, 1)
    api.post("/schemas", airline_schema, format="json")
    api.post("/tables", airline_offline_config, format="json")  # no retention configured
    upload(api, airline_segments[0][1])
    body = api.get("/periodictask/run?taskname=RetentionManager").json()
    assert body["taskReport"]["deletedSegments"] == {}
    assert len(store.segment_names("airlineStats_OFFLINE")) == 1


def test_segment_status_checker_reports_replicas_and_errors(api, store, table, airline_segments,
                                                            fake_servers):  # fmt: skip
    for _, tar in airline_segments[:2]:
        upload(api, tar)
    ideal = store.ideal_state("airlineStats_OFFLINE")
    (first, second) = sorted(ideal.segments)
    servers = {i: fake_servers(i) for i in ideal.instances()}
    broken = sorted(ideal.segments[first])[0]
    servers[broken].overrides[("airlineStats_OFFLINE", first)] = SegmentState.ERROR.value
    for server in servers.values():
        server.sync()
    store.refresh_external_views()
    body = api.get("/periodictask/run?taskname=SegmentStatusChecker").json()
    report = body["taskReport"]["airlineStats_OFFLINE"]
    assert report["replicasOnlinePerSegment"] == {first: 1, second: 2}
    assert report["errorSegments"] == [first] and report["segmentsInErrorState"] == 1
    assert report["numberOfReplicas"] == 1 and report["percentOfReplicas"] == 75.0
    saved = api.get("/periodictask/SegmentStatusChecker/report?tableName=airlineStats").json()
    assert saved["OFFLINE"]["replicasOnlinePerSegment"] == {first: 1, second: 2}
    assert saved["OFFLINE"]["errorSegments"] == [first]
    metrics = api.get("/metrics").content.decode()
    assert 'pinot_controller_segmentsInErrorState{table="airlineStats_OFFLINE"} 1' in metrics
    assert 'pinot_controller_numberOfReplicas{table="airlineStats_OFFLINE"} 1' in metrics


def test_reconcile_republishes_and_reports_drift(api, store, table):
    store.delete_table_config("airlineStats_OFFLINE")
    store.delete_schema("airlineStats")
    store.put_schema({"schemaName": "strayOne", "dimensionFieldSpecs": []})
    body = api.get("/periodictask/run?taskname=ClusterStateReconciler").json()["taskReport"]
    drifted = {item["path"] for item in body["drift"]}
    assert drifted == {
        store.paths.schema("airlineStats"),
        store.paths.table_config("airlineStats_OFFLINE"),
    }
    assert body["unmanaged"] == [store.paths.schema("strayOne")]
    assert store.schema("airlineStats")["schemaName"] == "airlineStats"
    assert store.table_config("airlineStats_OFFLINE")["tableName"] == "airlineStats_OFFLINE"
    version = store.stat(store.paths.table_config("airlineStats_OFFLINE")).version
    again = api.get("/periodictask/run?taskname=ClusterStateReconciler").json()["taskReport"]
    assert again["drift"] == []
    assert store.stat(store.paths.table_config("airlineStats_OFFLINE")).version == version
