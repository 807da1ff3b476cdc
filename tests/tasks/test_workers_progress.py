"""``GET /tasks/subtask/workers/progress`` against two real minions (Celery worker processes):
per minion, its subtasks with Pinot's minion-side states and progress log, filtered by state
and by minion; bad input is refused with the parameter named."""

from __future__ import annotations

import socket
import time

import pytest

from tasks.logic.driver import tick
from tests.tasks.conftest import wait_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
HOST = socket.gethostname()
FIRST, SECOND = f"Minion_{HOST}_wp1", f"Minion_{HOST}_wp2"


@pytest.fixture(scope="module")
def minions(start_minion):
    return [start_minion("wp1", "minion_untagged"), start_minion("wp2", "minion_untagged")]


def workers(api, **params) -> dict:
    response = api.get("/tasks/subtask/workers/progress", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_each_minion_lists_its_subtasks_by_minion_side_state(api, store, minions, make_table):
    # subtask 3 fails; the others sleep long enough to be seen running
    table = make_table({"TestTask": {"numSubtasks": "4", "sleepMs": "1500", "failIndex": "3"}})
    response = api.post(f"/tasks/schedule?taskType=TestTask&tableName={table}")
    name = response.json()["TestTask"]
    deadline = time.monotonic() + 60
    running: dict = {}
    while time.monotonic() < deadline and not running:
        tick(store)
        running = {w: subs for w, subs in workers(api, subTaskState="IN_PROGRESS").items() if subs}
        time.sleep(0.1)
    assert running, "no subtask was seen IN_PROGRESS"
    for worker, subtasks in running.items():
        assert worker in (FIRST, SECOND)
        for sub_name, progress in subtasks.items():
            assert sub_name.startswith(f"{name}_") and progress["taskId"] == sub_name
            assert progress["taskState"] == "IN_PROGRESS" and progress["startTs"] > 0
            assert "endTs" not in progress
            assert progress["progress"][0] == {"ts": progress["startTs"], "level": "INFO",
                                               "status": "Task started", "stage": "IN_PROGRESS"}  # fmt: skip

    wait_task(api, store, name)
    every = workers(api)
    assert set(every) >= {FIRST, SECOND}
    mine = {sub: (worker, p) for worker, subs in every.items() for sub, p in subs.items()
            if sub.startswith(f"{name}_")}  # fmt: skip
    assert sorted(mine) == [f"{name}_{i}" for i in range(4)]
    assert {worker for worker, _ in mine.values()} <= {FIRST, SECOND}
    for sub, (_, progress) in mine.items():
        log = progress["progress"]
        assert log[-1]["ts"] == progress["endTs"] >= progress["startTs"]
        if sub.endswith("_3"):
            assert progress["taskState"] == "ERROR" and log[-1]["level"] == "ERROR"
            assert log[-1]["stage"] == "ERROR" and "TestTaskFailure" in log[-1]["status"]
        else:
            assert progress["taskState"] == "SUCCEEDED"
            assert log[-1]["status"].startswith("Task succeeded in ")
            assert {"level": "INFO", "status": "done", "stage": "IN_PROGRESS"} in log

    errors = workers(api, subTaskState="ERROR")
    assert [s for subs in errors.values() for s in subs if s.startswith(name)] == [f"{name}_3"]
    assert not any(s.startswith(name) for subs in workers(api, subTaskState="IN_PROGRESS").values()
                   for s in subs)  # fmt: skip
    # one minion, with spaces around its id as Pinot trims them; it keeps its key when it ran
    # nothing in the state asked for
    only = workers(api, minionWorkerIds=f" {FIRST} ", subTaskState="CANCELLED")
    assert only == {FIRST: {}}
    both = workers(api, minionWorkerIds=f"{FIRST},{SECOND}", subTaskState="SUCCEEDED")
    assert set(both) == {FIRST, SECOND}


def test_bad_input_names_the_parameter(api, store, minions):
    response = api.get("/tasks/subtask/workers/progress", {"subTaskState": "RUNNING"})
    assert response.status_code == 400 and "subTaskState" in response.content.decode()
    response = api.get("/tasks/subtask/workers/progress", {"minionWorkerIds": "Minion_nope"})
    assert response.status_code == 404
    assert "Minion_nope" in response.content.decode()
    # the route is not taken for a task named "workers"
    assert api.get("/tasks/subtask/workers/state").status_code == 404
