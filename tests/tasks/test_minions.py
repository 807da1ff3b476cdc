"""Minions as separate Celery worker processes: a task goes only to the minions of its
tag, and a minion killed with SIGKILL in the middle of a subtask costs one attempt, which the
controller times out and gives to another minion, so the work is done exactly once."""

from __future__ import annotations

import signal
import socket
import time

import pytest
import requests

from sprig.stack.process import free_port, signal_group
from tests.tasks.conftest import wait_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.slow]


def test_a_task_goes_only_to_the_minions_of_its_tag(api, store, start_minion, make_table):
    start_minion("plain", "minion_untagged")
    start_minion("tagged", "tagA")
    table = make_table({"TestTask": {"numSubtasks": "4", "minionInstanceTag": "tagA"}})
    body = api.post(f"/tasks/schedule?taskType=TestTask&tableName={table}").json()
    assert body["generationErrors"] == "", body
    debug = wait_task(api, store, body["TestTask"])
    workers = {info["participant"] for info in debug["subtaskInfos"]}
    assert workers == {f"Minion_{socket.gethostname()}_tagged"}
    runtime = api.get(f"/tasks/task/{body['TestTask']}/runtime/config").json()
    assert runtime["MinionWorkerGroupTag"] == "tagA"
    # minionInstanceTag narrows what /tasks/schedule generates
    other = make_table({"TestTask": {"numSubtasks": "1"}})
    narrowed = api.post("/tasks/schedule?taskType=TestTask&minionInstanceTag=tagA").json()
    assert other not in str(narrowed) and narrowed["generationErrors"] == ""


def test_a_minion_killed_mid_subtask_is_timed_out_and_retried_elsewhere(
    api, store, start_minion, make_table
):
    doomed = start_minion("doomed", "tagB", SPRIG_ZK_SESSION_TIMEOUT_S="4")
    table = make_table({"TestTask": {"numSubtasks": "1", "minionInstanceTag": "tagB",
                                     "sleepMs": "60000", "sleepAttempts": "1"}})  # fmt: skip
    api.post("/cluster/configs", {"TestTask.tagB.timeoutMs": "3000",
                                  "TestTask.tagB.maxAttemptsPerTask": "2"}, format="json")  # fmt: skip
    try:
        name = api.post(f"/tasks/schedule?taskType=TestTask&tableName={table}").json()["TestTask"]
        debug = wait_task(api, store, name, states=("IN_PROGRESS",), timeout_s=30)
        from tasks.logic.driver import tick
        from tasks.models import Subtask

        deadline = time.monotonic() + 60
        while Subtask.objects.get(name=f"{name}_0").state != "RUNNING":
            assert time.monotonic() < deadline, "the subtask never started"
            tick(store)
            time.sleep(0.1)
        signal_group(doomed.pid, signal.SIGKILL)
        start_minion("rescuer", "tagB")
        debug = wait_task(api, store, name, timeout_s=120)
        (info,) = debug["subtaskInfos"]
        assert info["state"] == "COMPLETED"
        assert info["participant"] == f"Minion_{socket.gethostname()}_rescuer"
        subtask = Subtask.objects.get(name=f"{name}_0")
        assert subtask.attempts == 2 and subtask.result["attempt"] == 2
    finally:
        api.delete("/cluster/configs/TestTask.tagB.timeoutMs")
        api.delete("/cluster/configs/TestTask.tagB.maxAttemptsPerTask")


def test_a_minion_serves_pinot_s_task_metrics(api, store, start_minion, make_table):
    port = free_port()
    start_minion("metered", "tagM", SPRIG_MINION_METRICS_PORT=str(port))
    table = make_table({"TestTask": {"numSubtasks": "2", "failIndex": "1",
                                     "minionInstanceTag": "tagM"}})  # fmt: skip
    # the minion's ZooKeeper registration may trail its Celery worker's readiness under load:
    # scheduling then fails with a scheduling error, and is asked again
    deadline = time.monotonic() + 30
    while True:
        answer = api.post(f"/tasks/schedule?taskType=TestTask&tableName={table}").json()
        if answer.get("TestTask") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert answer.get("TestTask"), answer
    wait_task(api, store, answer["TestTask"])
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    labels = f'table="{table.removesuffix("_OFFLINE")}",tableType="OFFLINE",taskType="TestTask"'

    def value(series: str) -> float:
        (line,) = [row for row in text.splitlines() if row.startswith(f"{series}{{{labels}}}")]
        return float(line.rsplit(" ", 1)[1])

    assert value("pinot_minion_numberTasks_Count") == 2
    assert value("pinot_minion_numberTasksExecuted_Count") == 2
    assert value("pinot_minion_numberTasksCompleted_Count") == 1
    assert value("pinot_minion_numberTasksFailed_Count") == 1
    assert value("pinot_minion_numberOfTasks_Value") == 0
    assert value("pinot_minion_taskExecution_count") == 2
    assert value("pinot_minion_taskQueueing_count") == 2
