"""The minion task manager pages in a real headless Chromium against a live cluster of real
processes: a controller (which drives the tasks as the lead controller), a server and a real
minion (a Celery worker on the shared Redis) that runs the example TestTask.

A person schedules a task from the table task page and watches it complete, reads a failed
subtask's error on the task page, and stops and resumes the queue with the confirmations."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
import pytest
import requests
from playwright.sync_api import expect

from sprig.runtime import REPO_ROOT
from sprig.stack.cluster import controller_process, minion_process, server_process
from sprig.stack.process import free_port
from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

TYPE = "TestTask"
SCHEDULED = "tmEvents_OFFLINE"  # TestTask in its config, with a cron schedule
ADHOC = "tmAdhoc_OFFLINE"  # no TestTask in its config: runs it only ad hoc
STREAM = "tmStream_REALTIME"  # a REALTIME table: Pinot's UI shows {} as its task config
CRON = "0 0 3 * * ?"
SLOW = 30_000  # ms: the pages refresh every 5 s and a task takes a few seconds


@dataclass
class TaskCluster:
    url: str
    minion: str

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", timeout=30, **kwargs)

    def wait_state(self, task: str, states: tuple[str, ...], timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        state = None
        while time.monotonic() < deadline:
            state = self.api("GET", f"/tasks/task/{task}/state").json()
            if state in states:
                return state
            time.sleep(0.2)
        raise AssertionError(f"{task} is {state}, not one of {states}")


def add_table(cluster: TaskCluster, schema: dict, config: dict, name: str, tasks: dict) -> None:
    schema = {**schema, "schemaName": name}
    config = {**config, "tableName": name, "task": {"taskTypeConfigsMap": tasks}}
    for path, body in (("/schemas", schema), ("/tables", config)):
        response = cluster.api("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"


@pytest.fixture(scope="module")
def task_cluster(zookeeper, redis_server, pinot_examples, tmp_path_factory) -> Iterator:
    workdir = tmp_path_factory.mktemp("task_console")
    env = {
        "SPRIG_ZK": zookeeper.address,
        "SPRIG_CLUSTER_NAME": f"taskconsole_{uuid.uuid4().hex[:8]}",
        "SPRIG_DATA_DIR": str(workdir / "data"),
        # a Redis database of its own, so no other test's minion takes these subtasks
        "SPRIG_REDIS_URL": redis_server.url.rsplit("/", 1)[0] + "/12",
        "SPRIG_MINION_TASK_PLUGINS": "tests.tasks.example",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }
    port = free_port()
    processes = [
        controller_process(workdir, port, env),
        server_process(workdir, free_port(), free_port(), env),
        minion_process(workdir, {**env, "SPRIG_DATA_DIR": str(workdir / "minion")}),
    ]
    try:
        for process in processes:
            process.start()
            process.wait_ready()
        cluster = TaskCluster(url=f"http://127.0.0.1:{port}", minion="minion")
        batch = pinot_examples / "batch" / "airlineStats"
        schema = orjson.loads((batch / "airlineStats_schema.json").read_bytes())
        config = orjson.loads((batch / "airlineStats_offline_table_config.json").read_bytes())
        tasks = {"numSubtasks": "3", "sleepMs": "1500", "schedule": CRON}
        add_table(cluster, schema, config, SCHEDULED.removesuffix("_OFFLINE"), {TYPE: tasks})
        add_table(cluster, schema, config, ADHOC.removesuffix("_OFFLINE"), {})
        stream = pinot_examples / "stream" / "airlineStats"
        realtime = orjson.loads((stream / "airlineStats_realtime_table_config.json").read_bytes())
        add_table(cluster, schema, realtime, STREAM.removesuffix("_REALTIME"),
                  {TYPE: {"numSubtasks": "1", "sleepMs": "10"}})  # fmt: skip
        yield cluster
    finally:
        for process in reversed(processes):
            process.stop()


@pytest.fixture
def page(browser, task_cluster) -> Iterator:
    context = browser.new_context(
        base_url=task_cluster.url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught script errors: {errors}"


def table_page(type_: str, table: str) -> str:
    return f"/console/task-queue/{type_}/tables/{table}"


def test_schedule_now_from_the_table_page_and_watch_the_task_complete(page, task_cluster):
    page.goto(table_page(TYPE, SCHEDULED))
    expect(page.get_by_test_id("cron-expression")).to_have_text(CRON)
    expect(page.get_by_test_id("cron-next")).to_contain_text(":")
    expect(page.get_by_test_id("task-config")).to_contain_text('"numSubtasks": "3"')
    expect(
        page.get_by_test_id("tasks-table").or_(page.locator("#task-list .empty"))
    ).to_be_visible()

    page.get_by_test_id("schedule-now").click()
    page.get_by_role("dialog").get_by_role("button", name="Schedule").click()
    result = page.get_by_test_id("schedule-result")
    link = result.get_by_role("link", name=re.compile(r"^Task_TestTask_"))
    expect(link).to_be_visible()
    task = link.inner_text()

    # a second run while the first is unfinished: the generator makes nothing
    page.get_by_test_id("schedule-now").click()
    page.get_by_role("dialog").get_by_role("button", name="Schedule").click()
    expect(page.get_by_test_id("nothing-to-schedule")).to_be_visible()

    row = page.get_by_test_id("tasks-table").locator("tr", has_text=task)
    expect(row).to_contain_text("COMPLETED", timeout=SLOW)
    expect(row).to_contain_text("MANUAL_TRIGGER")
    expect(row.locator(".subtask-counts")).to_have_text("3 · 3 · 0 · 0 · 0")
    # the generator's watermark, in ms and as a date
    metadata = page.get_by_test_id("metadata-table")
    expect(metadata.locator("tr", has_text="runs")).to_contain_text("1")
    expect(metadata.locator("tr", has_text="watermarkMs")).to_contain_text(
        re.compile(r"\d{13} = \d{4}-\d\d-\d\dT")
    )
    page.get_by_test_id("state-filter").select_option("COMPLETED")
    expect(page.get_by_test_id("tasks-table").locator("tbody tr")).to_have_count(1)
    screenshot(page, "task-table")

    row.get_by_role("link", name=task).click()
    expect(page.get_by_test_id("task-state")).to_have_text("COMPLETED")
    expect(page.get_by_test_id("task-trigger")).to_have_text("MANUAL_TRIGGER")
    subtasks = page.get_by_test_id("subtasks-table").locator("tbody tr")
    expect(subtasks).to_have_count(3)
    for i in range(3):
        expect(subtasks.nth(i).locator(".subtask-id")).to_have_attribute("title", f"{task}_{i}")
        expect(subtasks.nth(i)).to_contain_text("COMPLETED")
        expect(subtasks.nth(i)).to_contain_text("Minion_")
    bars = page.get_by_test_id("timeline").locator(".tl-bar")
    expect(bars).to_have_count(3)
    for i in range(3):  # one minion running one subtask at a time: a single lane
        expect(bars.nth(i)).to_have_attribute("style", re.compile(r"top:3px"))
    expect(page.get_by_test_id("runtime-table")).to_contain_text("minion_untagged")
    screenshot(page, "task-detail")


def test_an_adhoc_run_with_a_failing_subtask_shows_its_error(page, task_cluster):
    page.goto(table_page(TYPE, ADHOC))
    expect(page.get_by_test_id("task-config")).to_contain_text("only ad hoc")
    page.get_by_test_id("schedule-adhoc").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_test_id("adhoc-name").fill("failing-run")
    dialog.locator(".cm-content").fill('{"numSubtasks": "2", "failIndex": "1"}')
    dialog.get_by_test_id("adhoc-run").click()
    link = page.get_by_test_id("schedule-result").get_by_role("link")
    expect(link).to_have_text(re.compile("failing-run"))
    task = link.inner_text()
    task_cluster.wait_state(task, ("COMPLETED",))
    link.click()
    expect(page.get_by_test_id("task-trigger")).to_have_text("ADHOC_TRIGGER")
    failed = page.get_by_test_id("subtasks-table").locator(f'tr:has([title="{task}_1"])')
    expect(failed).to_contain_text("TASK_ERROR")
    expect(failed).to_contain_text(f"subtask {task}_1 fails on attempt 1")  # the first line
    expect(page.get_by_test_id("subtasks-table").locator(".subtask-error-line")).to_have_count(1)
    failed.locator(".subtask-error-line").click()  # to the whole error, traceback and all
    error = page.get_by_test_id("errors").locator(f'details[data-subtask="{task}_1"]')
    expect(error.locator("pre")).to_be_visible()
    expect(error.locator("pre")).to_contain_text("Traceback")
    expect(error.locator("pre")).to_contain_text("TestTaskFailure")
    expect(page.get_by_test_id("timeline").locator(".tl-bar.tl-task_error")).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar stays on top in the shot
    screenshot(page, "task-detail-failed")

    # the queue page lists the table that ran TestTask only ad hoc
    page.goto(f"/console/task-queue/{TYPE}")
    tables = page.get_by_test_id("queue-tables-table")
    adhoc = tables.locator("tr", has_text=ADHOC)
    expect(adhoc).to_contain_text("ad hoc only")
    expect(adhoc.locator("td").nth(2)).to_have_text("1")  # tasks
    expect(adhoc.locator("td").nth(3)).to_have_text("0")  # unfinished
    expect(tables.locator("tr", has_text=SCHEDULED)).to_contain_text("configured")
    expect(tables.locator("tr", has_text=STREAM)).to_contain_text("configured")


def test_stop_and_resume_the_queue_with_confirmation(page, task_cluster):
    if task_cluster.api("GET", f"/tasks/{TYPE}/state").status_code == 404:
        task_cluster.api(
            "POST", "/tasks/schedule", params={"taskType": TYPE, "tableName": SCHEDULED}
        )
    page.goto(f"/console/task-queue/{TYPE}")
    expect(page.get_by_test_id("queue-state")).to_have_text("IN_PROGRESS")

    page.get_by_test_id("queue-stop").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("No new subtask")
    dialog.get_by_role("button", name="Cancel").click()
    assert task_cluster.api("GET", f"/tasks/{TYPE}/state").json() == "IN_PROGRESS"

    page.get_by_test_id("queue-stop").click()
    page.get_by_role("dialog").get_by_role("button", name="Stop all").click()
    expect(page.get_by_test_id("queue-state")).to_have_text("STOPPED")
    assert task_cluster.api("GET", f"/tasks/{TYPE}/state").json() == "STOPPED"
    screenshot(page, "task-queue")

    page.get_by_test_id("queue-resume").click()
    page.get_by_role("dialog").get_by_role("button", name="Resume all").click()
    expect(page.get_by_test_id("queue-state")).to_have_text("IN_PROGRESS")
    assert task_cluster.api("GET", f"/tasks/{TYPE}/state").json() == "IN_PROGRESS"


def test_the_manager_shows_types_minions_and_queues(page, task_cluster):
    page.goto("/console/minion-task-manager")
    minion = page.get_by_test_id("minions-table").locator("tr", has_text="Minion_")
    expect(minion).to_contain_text("Alive")
    expect(minion).to_contain_text("minion_untagged")
    expect(page.get_by_test_id("tile-minions")).to_contain_text("1")
    queue = page.get_by_test_id("queues-table").locator(
        "tr", has=page.get_by_role("link", name=TYPE)
    )
    expect(queue).to_contain_text("IN_PROGRESS")
    count = task_cluster.api("GET", f"/tasks/{TYPE}/tasks/count").json()
    expect(queue.locator("td").nth(1)).to_have_text(str(count))
    expect(page.get_by_test_id("tile-types")).to_contain_text("1")
    expect(page.locator("nav.mainnav a.active")).to_have_text("Minion tasks")
    screenshot(page, "minion-task-manager")


def test_delete_a_task_then_clean_up_and_delete_the_queue(page, task_cluster):
    response = task_cluster.api("POST", "/tasks/execute", json={
        "taskType": TYPE, "tableName": ADHOC, "taskName": "to-delete",
        "taskConfigs": {"numSubtasks": "1"}})  # fmt: skip
    assert response.ok, response.text
    task = response.json()[ADHOC]
    task_cluster.wait_state(task, ("COMPLETED",))
    page.goto(f"{table_page(TYPE, ADHOC)}/task/{task}")
    expect(page.get_by_test_id("task-state")).to_have_text("COMPLETED")
    # the queue runs: without force the controller refuses, and the page says why
    page.get_by_test_id("task-delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator(".notice-error")).to_contain_text("only after its queue is stopped")
    page.locator(".notice-error .notice-close").click()  # it sits over the page's buttons
    page.get_by_test_id("task-delete").click()
    page.get_by_role("dialog").get_by_label("Force").check()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page).to_have_url(re.compile(f"{table_page(TYPE, ADHOC)}$"))
    assert task_cluster.api("GET", f"/tasks/task/{task}/state").status_code == 404

    page.goto(f"/console/task-queue/{TYPE}")
    expect(page.get_by_test_id("queue-task-count")).not_to_have_text("0")
    page.get_by_test_id("queue-cleanup").click()
    page.get_by_role("dialog").get_by_role("button", name="Clean up").click()
    expect(page.get_by_test_id("queue-task-count")).to_have_text("0")  # all were finished
    scheduled = page.get_by_test_id("queue-tables-table").locator("tr", has_text=SCHEDULED)
    expect(scheduled.locator("td").nth(2)).to_have_text("0")
    page.get_by_test_id("queue-delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_test_id("queue-state")).to_contain_text("no queue yet")
    assert task_cluster.api("GET", f"/tasks/{TYPE}/state").status_code == 404


def test_an_unknown_type_table_and_task_say_so(page, task_cluster):
    page.goto("/console/task-queue/NoSuchTask")
    expect(page.get_by_test_id("unknown-type")).to_be_visible()
    page.goto(table_page("NoSuchTask", "nosuch_OFFLINE"))
    expect(page.get_by_test_id("task-config")).to_contain_text("nosuch_OFFLINE")
    page.get_by_test_id("schedule-now").click()
    page.get_by_role("dialog").get_by_role("button", name="Schedule").click()
    expect(page.get_by_test_id("schedule-result")).to_contain_text("NoSuchTask")
    page.goto(f"{table_page(TYPE, SCHEDULED)}/task/Task_TestTask_nosuch_1")
    expect(page.locator("#subtasks")).to_contain_text("does not exist")


def test_a_realtime_table_shows_its_task_config(page, task_cluster):
    page.goto(table_page(TYPE, STREAM))
    expect(page.get_by_test_id("task-config")).to_contain_text('"numSubtasks": "1"')
    expect(page.get_by_test_id("cron")).to_contain_text("No cron schedule")


def test_the_adhoc_form_names_what_is_wrong(page, task_cluster):
    page.goto(table_page(TYPE, ADHOC))
    page.get_by_test_id("schedule-adhoc").click()
    dialog = page.get_by_role("dialog")
    configs = dialog.locator(".cm-content")
    for text, message in (
        ("[1, 2]", "must be a JSON object"),
        ('{"numSubtasks": ', "Invalid JSON"),
        ('{"numSubtasks": "many"}', "TestTask.numSubtasks"),  # the generator's own check
    ):
        configs.fill(text)
        dialog.get_by_test_id("adhoc-run").click()
        expect(dialog.locator(".validation.error")).to_contain_text(message)
    dialog.get_by_role("button", name="Close").click()
    # nothing was made, not even the queue (an earlier test deleted it)
    assert task_cluster.api("GET", f"/tasks/{TYPE}/{ADHOC}/state").status_code == 404
