"""The task framework end to end: the controller (in-process) generates TestTask subtasks and
records them; a real minion (Celery worker process) runs them through Redis; the controller
mirrors RUNNING, progress and COMPLETED or the error with its traceback."""

from __future__ import annotations

import socket
import time

import pytest

from tasks.logic.driver import tick
from tests.tasks.conftest import wait_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(scope="module")
def minion(start_minion):
    return start_minion("minion", "minion_untagged")


def schedule(api, task_type="TestTask", **params):
    query = "&".join(f"{k}={v}" for k, v in {"taskType": task_type, **params}.items())
    response = api.post(f"/tasks/schedule?{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_scheduled_task_runs_on_a_minion_and_is_recorded(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "3", "sleepMs": "300"}})
    body = schedule(api, tableName=table)
    assert body["generationErrors"] == "" and body["schedulingErrors"] == ""
    (name,) = body["TestTask"].split(",")
    assert name.startswith("Task_TestTask_") and name.split("_")[-1].isdigit()
    debug = wait_task(api, store, name)
    assert debug["taskState"] == "COMPLETED" and debug["triggeredBy"] == "MANUAL_TRIGGER"
    assert debug["subtaskCount"] == {"total": 3, "completed": 3, "running": 0, "waiting": 0,
                                     "error": 0, "unknown": 0, "dropped": 0, "timedOut": 0,
                                     "aborted": 0}  # fmt: skip
    infos = debug["subtaskInfos"]
    assert [i["taskId"] for i in infos] == [f"{name}_{i}" for i in range(3)]
    expected_worker = f"Minion_{socket.gethostname()}_minion"
    for info in infos:
        assert info["state"] == "COMPLETED" and info["participant"] == expected_worker
        assert info["startTime"].endswith(" UTC") and info["finishTime"].endswith(" UTC")
        assert info["taskConfig"]["tableName"] == table
        assert info["taskConfig"]["taskType"] == "TestTask"
        assert "info" not in info  # no error: null fields are left out
    # COMPLETED subtasks are hidden at verbosity 0
    assert api.get(f"/tasks/task/{name}/debug").json()["subtaskInfos"] == []

    assert api.get("/tasks/tasktypes").json() == ["TestTask"]
    assert api.get("/tasks/TestTask/state").json() == "IN_PROGRESS"
    assert api.get("/tasks/TestTask/tasks").json() == [name]
    assert api.get("/tasks/TestTask/tasks/count").json() == 1
    assert api.get("/tasks/TestTask/taskstates").json() == {name: "COMPLETED"}
    assert api.get(f"/tasks/TestTask/{table}/state").json() == {name: "COMPLETED"}
    assert api.get("/tasks/TestTask/NoSuchTable_OFFLINE/state").json() == {}
    counts = api.get("/tasks/TestTask/taskcounts?state=COMPLETED").json()
    assert counts[name]["completed"] == 3
    assert api.get("/tasks/TestTask/taskcounts?state=IN_PROGRESS").json() == {}
    assert api.get(f"/tasks/subtask/{name}/state").json() == {
        f"{name}_{i}": "COMPLETED" for i in range(3)
    }
    configs = api.get(f"/tasks/subtask/{name}/config?subtaskNames={name}_1").json()
    assert configs == {f"{name}_1": {"taskType": "TestTask", "taskId": f"{name}_1",
                                     "tableName": table,
                                     "configs": {"index": "1", "run": "1", "sleepMs": "300",
                                                 "tableName": table}}}  # fmt: skip
    assert api.get(f"/tasks/subtask/{name}/progress").json()[f"{name}_0"] == "done"
    assert len(api.get(f"/tasks/task/{name}/config").json()) == 3
    assert api.get(f"/tasks/task/{name}/runtime/config").json() == {
        "ConcurrentTasksPerWorker": "1", "TaskTimeoutMs": "3600000",
        "TaskExpireTimeMs": "86400000", "MinionWorkerGroupTag": "minion_untagged",
    }  # fmt: skip
    # the generator's watermark, where Pinot keeps it, through the API
    metadata = api.get(f"/tasks/TestTask/{table}/metadata").json()
    assert metadata["id"] == table and metadata["simpleFields"]["runs"] == "1"
    path = f"/{store.paths.cluster_name}/PROPERTYSTORE/MINION_TASK_METADATA/{table}/TestTask"
    assert store.get_record(path)[0].simple_fields["runs"] == "1"
    deleted = api.delete(f"/tasks/TestTask/{table}/metadata").json()
    assert deleted == {"status": f"Successfully deleted metadata for task type: TestTask "
                                 f"from table: {table}"}  # fmt: skip
    assert api.get(f"/tasks/TestTask/{table}/metadata").json() == {}
    history = api.get(f"/tasks/generator/{table}/TestTask/debug").json()
    assert history[0]["tableNameWithType"] == table and history[0]["mostRecentSuccessRunTS"]


def test_a_failing_executor_gives_task_error_with_its_traceback(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "2", "failIndex": "1"}})
    name = schedule(api, tableName=table)["TestTask"]
    debug = wait_task(api, store, name)
    # Helix's failure threshold for Pinot jobs is MAX_INT: the task completes
    assert debug["taskState"] == "COMPLETED"
    states = {i["taskId"]: i["state"] for i in debug["subtaskInfos"]}
    assert states == {f"{name}_0": "COMPLETED", f"{name}_1": "TASK_ERROR"}
    failed = debug["subtaskInfos"][1]
    assert failed["info"].startswith("Traceback (most recent call last)")
    assert "TestTaskFailure: subtask" in failed["info"] and len(failed["info"]) <= 1000
    counts = api.get("/tasks/TestTask/taskcounts").json()[name]
    assert counts["error"] == 1 and counts["completed"] == 1
    from tasks.models import Subtask

    full = Subtask.objects.get(name=f"{name}_1").info
    assert "in execute" in full and full.rstrip().endswith("fails on attempt 1")


def test_max_attempts_per_task_retries_a_failed_subtask(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "1", "failIndex": "0",
                                     "failAttempts": "1"}})  # fmt: skip
    assert api.post("/cluster/configs", {"TestTask.maxAttemptsPerTask": "2"},
                    format="json").status_code == 200  # fmt: skip
    try:
        name = schedule(api, tableName=table)["TestTask"]
        debug = wait_task(api, store, name)
        assert debug["subtaskInfos"][0]["state"] == "COMPLETED"
        from tasks.models import Subtask

        subtask = Subtask.objects.get(name=f"{name}_0")
        assert subtask.attempts == 2 and subtask.result["attempt"] == 2
    finally:
        api.delete("/cluster/configs/TestTask.maxAttemptsPerTask")


def test_timeout_ms_times_a_subtask_out(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "1", "sleepMs": "20000"}})
    api.post("/cluster/configs", {"TestTask.timeoutMs": "1500"}, format="json")
    try:
        name = schedule(api, tableName=table)["TestTask"]
        wait_task(api, store, name, states=("IN_PROGRESS",))
        deadline = time.monotonic() + 20
        while api.get(f"/tasks/subtask/{name}/state").json()[f"{name}_0"] != "RUNNING":
            assert time.monotonic() < deadline, "the subtask never started"
            tick(store)
            time.sleep(0.05)
        # while it runs: the counts, the summary and the metrics emitter all see it
        assert api.get("/tasks/TestTask/taskcounts").json()[name]["running"] == 1
        summary = api.get("/tasks/summary").json()
        assert summary["totalRunningTasks"] == 1 and summary["totalWaitingTasks"] == 0
        (tenant,) = summary["taskBreakdown"]
        assert tenant["tenant"] == "minion_untagged"
        assert tenant["taskTypeBreakdown"] == [
            {"taskType": "TestTask", "runningCount": 1, "waitingCount": 0}]  # fmt: skip
        assert api.get("/tasks/summary?tenant=other").json()["taskBreakdown"] == []
        emitted = api.get("/periodictask/run?taskname=TaskMetricsEmitter").json()["taskReport"]
        assert emitted["numMinionTasksInProgress"] == {"TestTask": 1}
        (series,) = [t for t in emitted["tables"] if t["table"] == table]
        assert series["numMinionSubtasksRunning"] == 1
        assert series["percentMinionSubtasksInQueue"] == 100.0
        metrics = api.get("/metrics").content.decode()
        raw = table.removesuffix("_OFFLINE")
        assert 'pinot_controller_numMinionTasksInProgress_Value{taskType="TestTask"} 1' in metrics
        assert (f'pinot_controller_numMinionSubtasksRunning_Value{{table="{raw}",'
                f'tableType="OFFLINE",taskType="TestTask"}} 1') in metrics  # fmt: skip
        debug = wait_task(api, store, name, timeout_s=40)
        (info,) = debug["subtaskInfos"]
        assert info["state"] == "TIMED_OUT" and "SoftTimeLimitExceeded" in info["info"]
    finally:
        api.delete("/cluster/configs/TestTask.timeoutMs")


def test_bad_input_is_refused_with_a_clear_error(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "many"}})
    response = api.post(f"/tasks/schedule?taskType=NoSuchTask&tableName={table}")
    assert (
        response.status_code == 400 and "NoSuchTask is not registered" in response.json()["error"]
    )
    assert api.post("/tasks/schedule?tableName=nope").status_code == 404
    body = schedule(api, tableName=table)
    assert "TestTask" not in body
    assert "Invalid task config 'TestTask.numSubtasks'" in body["generationErrors"]
    assert api.get("/tasks/NoSuchTask/state").status_code == 404
    assert api.get("/tasks/task/Task_TestTask_nope/state").status_code == 404
    execute = {"taskType": "NoSuchTask", "tableName": table, "taskConfigs": {}}
    assert api.post("/tasks/execute", execute, format="json").status_code == 404
    execute["taskType"] = "TestTask"
    execute["tableName"] = "nope"
    assert api.post("/tasks/execute", execute, format="json").status_code == 404
    assert api.post("/tasks/execute", {"tableName": table}, format="json").status_code == 400
    # a tag no minion has: nothing is scheduled, and the error says why
    other = make_table({"TestTask": {"minionInstanceTag": "nobody_has_it"}})
    body = schedule(api, tableName=other)
    assert "No minion instance found with tag: nobody_has_it" in body["generationErrors"]
    # a table without the type configured
    plain = make_table({})
    assert "has no TestTask" in schedule(api, tableName=plain)["generationErrors"]


def test_adhoc_execute_and_queue_stop_resume_cleanup_delete(api, store, minion, make_table):
    table = make_table({"TestTask": {"numSubtasks": "1"}})
    raw = table.removesuffix("_OFFLINE")
    request = {"taskType": "TestTask", "tableName": raw, "taskName": f"adhoc{raw}",
               "taskConfigs": {"numSubtasks": "2"}}  # fmt: skip
    created = api.post("/tasks/execute", request, format="json").json()
    name = f"Task_TestTask_adhoc{raw}"
    assert created == {table: name}
    assert api.post("/tasks/execute", request, format="json").status_code == 409
    debug = wait_task(api, store, name)
    assert debug["triggeredBy"] == "ADHOC_TRIGGER" and debug["subtaskCount"]["total"] == 2

    assert api.put("/tasks/TestTask/stop").json() == {
        "status": "Successfully stopped tasks for task type: TestTask"}  # fmt: skip
    assert api.get("/tasks/TestTask/state").json() == "STOPPED"
    body = schedule(api, tableName=table)
    assert "TestTask" not in body and "is STOPPED" in body["schedulingErrors"]
    request.pop("taskName")
    assert api.post("/tasks/execute", request, format="json").json() == {}
    assert api.put("/tasks/TestTask/resume").json()["status"].startswith("Successfully resumed")
    second = schedule(api, tableName=table)["TestTask"]
    wait_task(api, store, second)

    # one task is deleted only from a stopped queue, unless forced
    assert api.delete(f"/tasks/task/{second}").status_code == 400
    assert api.delete(f"/tasks/task/{second}?forceDelete=true").json() == {
        "status": f"Successfully deleted task: {second}"}  # fmt: skip
    assert api.put("/tasks/TestTask/cleanup").json()["status"].startswith("Successfully cleaned")
    assert api.get("/tasks/TestTask/tasks").json() == []
    assert api.delete("/tasks/TestTask").json() == {
        "status": "Successfully deleted tasks for task type: TestTask"}  # fmt: skip
    assert api.get("/tasks/TestTask/state").status_code == 404


def test_generation_lock_allows_one_generation_per_table_and_type(api, store, minion,
                                                                  make_table):  # fmt: skip
    from tasks.logic.generation_lock import generation_lock

    table = make_table({"TestTask": {"numSubtasks": "1"}})
    with generation_lock(store, table, "TestTask"):
        body = schedule(api, tableName=table)
        assert "another TestTask generation" in body["generationErrors"]
    assert schedule(api, tableName=table)["TestTask"]
    # a lock left behind is released by hand
    with generation_lock(store, table, "TestTask"):
        released = api.delete(f"/tasks/lock/forceRelease?tableNameWithType={table}").json()
        assert released["status"].startswith("Successfully released")
