"""The subtask page and a table's task history in a real headless Chromium against the live
task cluster of the task manager tests (controller, server and a real minion running the
example TestTask): a run made to fail is marked in the history with the first line of its
error, and its failed subtask's page shows the whole error, the minion and the config."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot
from tests.console.test_task_manager_browser import (  # noqa: F401 (fixtures)
    ADHOC,
    TYPE,
    page,
    task_cluster,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]
HISTORY = f"/console/task-queue/{TYPE}/tables/{ADHOC}/history"


def run(cluster, name: str, configs: dict) -> str:
    request = {"taskType": TYPE, "tableName": ADHOC.removesuffix("_OFFLINE"),
               "taskName": name, "taskConfigs": configs}  # fmt: skip
    response = cluster.api("POST", "/tasks/execute", json=request)
    assert response.ok, response.text
    task = response.json()[ADHOC]
    cluster.wait_state(task, ("COMPLETED",))
    return task


def test_history_marks_the_failed_run_and_its_subtask_shows_the_error(page, task_cluster):  # noqa: F811
    stamp = int(time.time())
    good = run(task_cluster, f"hist-ok-{stamp}", {"numSubtasks": "2", "sleepMs": "300"})
    bad = run(task_cluster, f"hist-bad-{stamp}", {"numSubtasks": "2", "failIndex": "1"})

    page.goto(HISTORY)
    table = page.get_by_test_id("history-table")
    failed = table.locator(f'tr[data-task="{bad}"]')
    expect(failed).to_have_attribute("data-outcome", "failed")
    expect(failed.locator('td[data-col="error"]')).to_contain_text(
        f"subtask {bad}_1 fails on attempt 1"
    )
    expect(table.locator(f'tr[data-task="{good}"]')).to_have_attribute("data-outcome", "ok")
    expect(table.locator(f'tr[data-task="{good}"] td[data-col="error"]')).to_have_text("")
    expect(page.get_by_test_id("history-chart")).to_be_visible()
    expect(page.locator("#history-note")).to_contain_text("run(s)")

    # the filter survives the 5 s refresh
    page.get_by_test_id("history-filter").select_option("failed")
    expect(table.locator(f'tr[data-task="{good}"]')).to_have_count(0)
    page.wait_for_timeout(5_500)
    expect(page.get_by_test_id("history-filter")).to_have_value("failed")
    expect(table.locator(f'tr[data-task="{good}"]')).to_have_count(0)
    expect(table.locator(f'tr[data-task="{bad}"]')).to_have_count(1)
    screenshot(page, "task-history")

    failed.locator('td[data-col="error"] a').click()
    expect(page).to_have_url(
        f"{task_cluster.url}/console/task-queue/{TYPE}/tables/{ADHOC}/task/{bad}/sub-task/{bad}_1"
    )
    fields = page.get_by_test_id("subtask-fields")
    expect(fields).to_contain_text("TASK_ERROR")
    expect(fields).to_contain_text("ADHOC_TRIGGER")
    expect(fields.locator("tr", has_text="Minion")).not_to_contain_text("not taken")
    error = page.get_by_test_id("subtask-error")
    expect(error.get_by_test_id("subtask-error-line")).to_contain_text("fails on attempt 1")
    expect(error.locator("pre")).to_contain_text("Traceback")
    expect(error.locator("pre")).to_contain_text("TestTaskFailure")
    expect(page.get_by_test_id("subtask-config")).to_contain_text("failIndex")
    screenshot(page, "subtask-failed")

    # a subtask that ran fine has no error section; an unknown one says so
    page.goto(f"/console/task-queue/{TYPE}/tables/{ADHOC}/task/{good}/sub-task/{good}_0")
    expect(page.get_by_test_id("subtask-fields")).to_contain_text("COMPLETED")
    expect(page.get_by_test_id("subtask-error")).to_be_hidden()
    page.goto(f"/console/task-queue/{TYPE}/tables/{ADHOC}/task/{good}/sub-task/{good}_9")
    expect(page.get_by_role("alert")).to_contain_text(f"has no subtask {good}_9")


def test_task_tables_link_to_the_subtask_and_history_pages(page, task_cluster):  # noqa: F811
    stamp = int(time.time())
    bad = run(task_cluster, f"links-bad-{stamp}", {"numSubtasks": "2", "failIndex": "1"})
    table_page = f"/console/task-queue/{TYPE}/tables/{ADHOC}"

    # the queue page's tables link to each table's history
    page.goto(f"/console/task-queue/{TYPE}")
    row = page.get_by_test_id("queue-tables-table").locator("tr", has_text=ADHOC)
    row.get_by_test_id("history-link").click()
    expect(page).to_have_url(f"{task_cluster.url}{HISTORY}")
    expect(page.get_by_test_id("history-table").locator(f'tr[data-task="{bad}"]')).to_be_visible()

    # so does the table task page
    page.goto(table_page)
    page.get_by_test_id("history-link").click()
    expect(page).to_have_url(f"{task_cluster.url}{HISTORY}")

    # a task's subtasks link to their pages, from the table and from the error card
    page.goto(f"{table_page}/task/{bad}")
    subtasks = page.get_by_test_id("subtasks-table")
    subtasks.locator("a.subtask-id", has_text="…_0").click()
    expect(page).to_have_url(f"{task_cluster.url}{table_page}/task/{bad}/sub-task/{bad}_0")
    expect(page.get_by_test_id("subtask-fields")).to_contain_text("COMPLETED")
    page.go_back()
    errors = page.get_by_test_id("errors")
    errors.get_by_role("link", name="The whole error").click()
    expect(page).to_have_url(f"{task_cluster.url}{table_page}/task/{bad}/sub-task/{bad}_1")
    expect(page.get_by_test_id("subtask-error").locator("pre")).to_contain_text("TestTaskFailure")
