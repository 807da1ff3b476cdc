"""Scheduling: the periodic PinotTaskManager, and cron `schedule`s run by APScheduler jobs that
follow table config changes and survive a controller restart, with Pinot's jobDetails."""

from __future__ import annotations

import copy
import time

import pytest

from engine.common.clock import now_ms
from tasks.models import Task
from tests.tasks.conftest import wait_task

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def minion(start_minion):
    return start_minion("minion", "minion_untagged")


@pytest.mark.django_db
def test_pinot_task_manager_schedules_every_configured_type(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "1"}})
    body = api.get(f"/periodictask/run?taskname=PinotTaskManager&tableName={table}").json()
    assert body["isSuccessful"] is True
    report = body["taskReport"][table]
    assert report["generationErrors"] == "" and report["TestTask"].startswith("Task_TestTask_")
    debug = wait_task(api, store, report["TestTask"])
    assert debug["triggeredBy"] == "CRON_TRIGGER"
    metrics = api.get("/periodictask/run?taskname=TaskMetricsEmitter").json()["taskReport"]
    assert set(metrics) == {"numMinionTasksInProgress", "tables"}


@pytest.mark.django_db(transaction=True)
def test_cron_schedule_fires_follows_config_changes_and_survives_restart(
    api, store, minion, make_table
):
    from tasks.controller import _cron_fire
    from tasks.scheduler import CronScheduler

    table = make_table({"TestTask": {"numSubtasks": "1", "schedule": "* * * * * ?"}})
    details = api.get(f"/tasks/scheduler/jobDetails?tableName={table}&taskType=TestTask").json()
    (trigger,) = details["Triggers"]
    assert details["JobKey"] == {"name": table, "group": "TestTask"}
    assert trigger["CronExpression"] == "* * * * * ?" and trigger["PreviousFireTime"] is None
    assert trigger["NextFireTime"] >= now_ms() - 1000
    assert {"name": table, "group": "TestTask"} in api.get("/tasks/scheduler/jobKeys").json()
    scheduled = (
        f'pinot_controller_cronSchedulerJobScheduled_Value{{table="{table}",taskType="TestTask"}} 1'
    )
    assert scheduled in api.get("/metrics").content.decode()

    cron = CronScheduler(_cron_fire)
    cron.sync()
    try:
        deadline = time.monotonic() + 20
        while not Task.objects.filter(table_name=table, triggered_by="CRON_TRIGGER").exists():
            assert time.monotonic() < deadline, "the cron job never scheduled a task"
            time.sleep(0.2)
        name = Task.objects.get(table_name=table).name
        wait_task(api, store, name)
        details = api.get(f"/tasks/scheduler/jobDetails?tableName={table}&taskType=TestTask")
        assert details.json()["Triggers"][0]["PreviousFireTime"] is not None
        triggered = f'pinot_controller_cronSchedulerJobTriggered_Count{{table="{table}",'
        assert triggered in api.get("/metrics").content.decode()
        info = api.get("/tasks/scheduler/information").json()
        assert info["Started"] is False  # this process's own scheduler is not the test's
    finally:
        cron.stop()

    # a restarted controller rebuilds the same jobs from the table configs
    restarted = CronScheduler(_cron_fire)
    restarted.sync()
    try:
        assert restarted._jobs[(table, "TestTask")] == "* * * * * ?"
        # a config change moves the job; removing the schedule removes it
        raw = table.removesuffix("_OFFLINE")
        config = copy.deepcopy(api.get(f"/tables/{raw}?type=OFFLINE").json()["OFFLINE"])
        config["task"]["taskTypeConfigsMap"]["TestTask"]["schedule"] = "0 0 12 ? * MON"
        assert api.put(f"/tables/{raw}", config, format="json").status_code == 200
        restarted.sync()
        assert restarted._jobs[(table, "TestTask")] == "0 0 12 ? * MON"
        del config["task"]["taskTypeConfigsMap"]["TestTask"]["schedule"]
        assert api.put(f"/tables/{raw}", config, format="json").status_code == 200
        restarted.sync()
        assert (table, "TestTask") not in restarted._jobs
    finally:
        restarted.stop()


@pytest.mark.django_db
def test_a_bad_schedule_is_reported_naming_the_key(api, store, minion, make_table):
    table = make_table({"TestTask": {"schedule": "0 0 12 15W * ?"}})
    response = api.get(f"/tasks/scheduler/jobDetails?tableName={table}&taskType=TestTask")
    assert response.status_code == 404
    assert "Invalid task config 'TestTask.schedule'" in response.json()["error"]
    assert "'W' and 'L-n' are not supported" in response.json()["error"]
    assert api.get("/tasks/scheduler/jobDetails?tableName=nope_OFFLINE&taskType=TestTask"
                   ).status_code == 404  # fmt: skip
    assert api.get("/tasks/scheduler/jobDetails").status_code == 400
