"""The periodic tasks page in a real headless Chromium against a live controller: every task
with its frequency, last run, duration and outcome read from /periodictask/status, Run now
showing the task's report, and a run started elsewhere (the REST API) appearing on its own."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_run_now_shows_the_report_and_the_controllers_record(page, console_cluster):
    page.goto("/console/tasks")
    table = page.get_by_test_id("tasks-table")
    for status in console_cluster.api("GET", "/periodictask/status").json():
        row = table.locator(f'tr[data-task-row="{status["taskName"]}"]')
        expect(row).to_contain_text(status["taskName"])
        expect(row.locator('td[data-col="outcome"]')).not_to_be_empty()

    row = table.locator('tr[data-task-row="SegmentStatusChecker"]')
    before = console_cluster.api("GET", "/periodictask/status").json()
    runs = next(s["numberOfRuns"] for s in before if s["taskName"] == "SegmentStatusChecker")
    row.get_by_role("button", name="Run now").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("SegmentStatusChecker: run over all tables")
    expect(dialog).to_contain_text("Succeeded")
    expect(dialog).to_contain_text("taskReport")
    screenshot(page, "periodic-task-report")
    dialog.get_by_role("button", name="Close").click()
    expect(row.locator('td[data-col="outcome"]')).to_contain_text("OK")
    expect(row.locator("td").nth(6)).to_have_text(str(runs + 1))
    expect(row.locator('td[data-col="last-run"]')).not_to_have_text(
        "\u2013"
    )  # the page's dash for "never"
    expect(row.locator('td[data-col="duration"]')).to_contain_text("ms")

    # a run nobody started from this page shows up within the 5 s refresh, without a reload
    other = table.locator('tr[data-task-row="RetentionManager"]')
    count = int(other.locator("td").nth(6).inner_text())
    answer = console_cluster.api(
        "GET", "/periodictask/run", params={"taskname": "RetentionManager"}
    ).json()
    assert answer["isSuccessful"], answer
    # its own schedule may run it too meanwhile: at least one run more, not exactly one
    expect(other.locator("td").nth(6)).not_to_have_text(str(count), timeout=12_000)
    assert int(other.locator("td").nth(6).inner_text()) >= count + 1
    expect(other.locator('td[data-col="outcome"]')).to_contain_text("OK")

    # and a fresh browser (no storage of its own) sees the same record
    page.context.clear_cookies()
    page.evaluate("localStorage.clear()")
    page.reload()
    expect(row.locator('td[data-col="outcome"]')).to_contain_text("OK")
    screenshot(page, "periodic-tasks")


def test_run_now_over_one_table(page, console_cluster):
    page.goto("/console/tasks")
    page.get_by_test_id("task-table").select_option("airlineStats")
    row = page.get_by_test_id("tasks-table").locator('tr[data-task-row="SegmentStatusChecker"]')
    row.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("dialog")).to_contain_text("run over airlineStats")
    expect(page.get_by_role("dialog")).to_contain_text("Succeeded")
