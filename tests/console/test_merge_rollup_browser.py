"""A MergeRollupTask scheduled from the table task page in a real headless Chromium, against a
live cluster of real processes: a controller (driving the tasks as the lead controller), a
server, a broker and a minion with its own SparkSession (`start_task_cluster`).

A person opens the table task page of a small OFFLINE table of day segments, clicks Schedule
now, follows the task to COMPLETED, reads its subtasks on the task page, and the broker
answers COUNT(*) and SUM as before from fewer, merged segments."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot
from tests.engine.query import conformance
from tests.tasks.conftest import start_task_cluster, stop_task_cluster
from tests.tasks.test_merge_rollup import (
    FLIGHTS_CONFIG,
    FLIGHTS_SCHEMA,
    WEEKLY_CONCAT,
    day_tars,
    load_table,
    wait_answer,
    wait_route,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

TYPE = "MergeRollupTask"
# Spark on a loaded 2-core machine: a merge takes seconds alone, minutes when others run too
DONE_MS = 600_000


@pytest.fixture(scope="module")
def task_cluster(zookeeper, redis_server, tmp_path_factory):
    # a Redis database of its own, so no other test's minion takes these subtasks
    redis_url = redis_server.url.rsplit("/", 1)[0] + "/13"
    cluster = start_task_cluster(zookeeper.address, redis_url,
                                 tmp_path_factory.mktemp("merge_console"))  # fmt: skip
    yield cluster
    stop_task_cluster(cluster)


@pytest.fixture(scope="module")
def flights_days(pinot_examples) -> list[list[dict]]:
    """2014-01-01 .. 2014-01-04: the first epoch week (from Thursday 2014-01-02) splits them
    into a bucket of one day and a bucket of three, so the task has two subtasks."""
    paths = conformance.airline_avro_files(pinot_examples)[:4]
    return [[{"Carrier": r["Carrier"], "Origin": r["Origin"], "Distance": r["Distance"],
              "NumFlights": 1, "MaxArrDelay": r["ArrDelay"] or 0,
              "DaysSinceEpoch": r["DaysSinceEpoch"]}
             for r in conformance.read_avro(path)] for path in paths]  # fmt: skip


@pytest.fixture
def page(browser, task_cluster) -> Iterator:
    context = browser.new_context(
        base_url=task_cluster.controller_url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught script errors: {errors}"


def test_schedule_a_merge_from_the_table_page_and_watch_it_complete(
    page, task_cluster, flights_days, tmp_path
):
    rows = [r for day in flights_days for r in day]
    weeks = {r["DaysSinceEpoch"] // 7 for r in rows}
    assert len(weeks) == 2, weeks  # one subtask per epoch week
    tars = day_tars(flights_days, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tmp_path)
    table = load_table(task_cluster, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tars, WEEKLY_CONCAT)
    sql = f"SELECT COUNT(*), SUM(Distance) FROM {table}"
    total = [[len(rows), float(sum(r["Distance"] for r in rows))]]
    before = wait_answer(task_cluster, sql, total)
    assert before["numSegmentsQueried"] == len(flights_days)

    page.goto(f"/console/task-queue/{TYPE}/tables/{table}_OFFLINE")
    expect(page.get_by_test_id("task-config")).to_contain_text('"7day.mergeType": "concat"')
    page.get_by_test_id("schedule-now").click()
    page.get_by_role("dialog").get_by_role("button", name="Schedule").click()
    link = page.get_by_test_id("schedule-result").get_by_role(
        "link", name=re.compile(rf"^Task_{TYPE}_")
    )
    expect(link).to_be_visible()
    task = link.inner_text()

    row = page.get_by_test_id("tasks-table").locator("tr", has_text=task)
    expect(row).to_contain_text("COMPLETED", timeout=DONE_MS)
    expect(row).to_contain_text("MANUAL_TRIGGER")
    expect(row.locator(".subtask-counts")).to_have_text("2 · 2 · 0 · 0 · 0")
    # the generator's watermark for the 7day level, in ms and as a date
    expect(page.get_by_test_id("metadata-table")).to_contain_text(
        re.compile(r"\d{13} = \d{4}-\d\d-\d\dT")
    )
    screenshot(page, "merge-rollup-table")
    # every bucket is merged now: a second run has nothing to do, and the page says so
    page.get_by_test_id("schedule-now").click()
    page.get_by_role("dialog").get_by_role("button", name="Schedule").click()
    expect(page.get_by_test_id("nothing-to-schedule")).to_be_visible()

    row.get_by_role("link", name=task).click()
    expect(page.get_by_test_id("task-state")).to_have_text("COMPLETED")
    expect(page.get_by_test_id("task-trigger")).to_have_text("MANUAL_TRIGGER")
    subtasks = page.get_by_test_id("subtasks-table").locator("tbody tr")
    expect(subtasks).to_have_count(2)
    for i in range(2):
        expect(subtasks.nth(i).locator(".subtask-id")).to_have_attribute("title", f"{task}_{i}")
        expect(subtasks.nth(i)).to_contain_text("COMPLETED")
        expect(subtasks.nth(i)).to_contain_text("Minion_")
    expect(page.get_by_test_id("timeline").locator(".tl-bar")).to_have_count(2)
    screenshot(page, "merge-rollup-task")

    # the same rows from one merged segment per week, once the outputs are ONLINE and routed
    after = wait_route(task_cluster, sql, total, len(weeks))
    assert after["numSegmentsQueried"] < before["numSegmentsQueried"]
