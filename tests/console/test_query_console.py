"""The query console in a real headless Chromium: queries go through the controller's /sql to
a live broker and two servers holding airlineStats."""

from __future__ import annotations

import csv
import io
import re

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def type_query(page, sql: str) -> None:
    page.locator("#editor .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(sql)


def run(page, sql: str) -> None:
    type_query(page, sql)
    page.keyboard.press("Control+Enter")
    expect(page.locator("#run-status")).to_contain_text(re.compile("Done|Failed|errors"))


def api_rows(cluster, sql: str) -> list[list]:
    body = cluster.api("POST", "/sql", json={"sql": sql}).json()
    assert not body["exceptions"], body
    return body["resultTable"]["rows"]


def test_sidebar_table_fills_the_editor_and_shows_its_schema(page, console_cluster):
    page.goto("/console/query")
    page.get_by_test_id("table-list").get_by_role("button", name="airlineStats", exact=True).click()
    expect(page.locator("#editor .cm-content")).to_have_text("select * from airlineStats limit 10")
    schema = page.get_by_test_id("sidebar-schema")
    expect(schema).to_contain_text("DaysSinceEpoch")
    expect(schema).to_contain_text("Carrier")
    # a column name goes into the query at the cursor
    page.locator("#editor .cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text(" -- ")
    schema.get_by_role("button", name="Carrier", exact=True).click()
    expect(page.locator("#editor .cm-content")).to_have_text(
        "select * from airlineStats limit 10 -- Carrier"
    )
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("result-grid").locator("tbody tr")).to_have_count(10)
    screenshot(page, "query")


def test_run_query_shows_the_rows_and_the_response_stats(page, console_cluster):
    sql = "select Carrier, FlightNum, DaysSinceEpoch from airlineStats order by FlightNum desc, Carrier limit 7"
    expected = api_rows(console_cluster, sql)
    page.goto("/console/query")
    run(page, sql)
    grid = page.get_by_test_id("result-grid")
    expect(grid.locator("thead th")).to_have_text(["Carrier", "FlightNum", "DaysSinceEpoch"])
    rows = grid.locator("tbody tr")
    expect(rows).to_have_count(7)
    for index, row in enumerate(expected):
        expect(rows.nth(index).locator("td")).to_have_text([str(v) for v in row])

    # the stats are the broker's own numbers for this query
    response = console_cluster.api("POST", "/sql", json={"sql": sql}).json()
    stats = page.get_by_test_id("stats")
    for key in ("totalDocs", "numDocsScanned", "numSegmentsQueried", "numSegmentsProcessed",
                "numSegmentsMatched", "numServersQueried", "numServersResponded"):  # fmt: skip
        expect(stats.locator(f'[data-stat="{key}"] .stat-value')).to_have_text(str(response[key]))
    expect(stats.locator('[data-stat="totalDocs"] .stat-value')).to_have_text(
        str(console_cluster.rows["airlineStats"])
    )
    expect(stats.locator('[data-stat="numSegmentsQueried"] .stat-value')).to_have_text("4")
    expect(stats.locator('[data-stat="numServersResponded"] .stat-value')).to_have_text("2")
    expect(stats.locator('[data-stat="partialResult"] .stat-value')).to_have_text("false")
    expect(stats.locator('[data-stat="timeUsedMs"] .stat-value')).to_have_text(re.compile(r"^\d+$"))

    # the raw BrokerResponse, pretty-printed
    page.get_by_role("tab", name="JSON").click()
    expect(page.get_by_test_id("json-view")).to_contain_text('"resultTable": {')
    expect(page.get_by_test_id("json-view")).to_contain_text('"numServersResponded": 2')
    # the query is in the URL
    assert "query=select+Carrier" in page.url or "query=select%20Carrier" in page.url


def test_bad_sql_shows_the_brokers_message_and_code(page, console_cluster):
    page.goto("/console/query")
    run(page, "selec Carrier frm airlineStats")
    error = page.get_by_test_id("query-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Error 150")
    expect(error).to_contain_text("frm")
    screenshot(page, "query-error")

    run(page, "select NoSuchColumn from airlineStats")
    expect(error).to_contain_text("NoSuchColumn")
    expect(error.locator(".error-code")).to_have_text(re.compile(r"Error \d+"))

    # a good query afterwards clears the error
    run(page, "select count(*) from airlineStats")
    expect(error).to_be_hidden()
    expect(page.get_by_test_id("result-grid").locator("tbody td")).to_have_text(
        str(console_cluster.rows["airlineStats"])
    )


def test_results_grid_sorts_searches_pages_and_downloads_csv(page, console_cluster):
    sql = "select Carrier, FlightNum from airlineStats limit 60"
    expected = api_rows(console_cluster, sql)
    page.goto("/console/query")
    run(page, sql)
    grid = page.get_by_test_id("result-grid")
    expect(grid.locator("tbody tr")).to_have_count(25)
    expect(page.get_by_test_id("grid-page")).to_have_text("Page 1 of 3")
    page.get_by_role("button", name=re.compile("^Next")).click()
    expect(page.get_by_test_id("grid-page")).to_have_text("Page 2 of 3")

    grid.locator("thead th", has_text="FlightNum").click()  # ascending
    grid.locator("thead th", has_text="FlightNum").click()  # descending
    expect(page.get_by_test_id("grid-page")).to_have_text("Page 2 of 3")
    page.get_by_role("button", name=re.compile("Prev$")).click()
    highest = max(row[1] for row in expected)
    expect(grid.locator("tbody tr").first.locator("td").nth(1)).to_have_text(str(highest))

    carrier = expected[0][0]
    page.get_by_role("searchbox", name="Search results").fill(carrier)
    matching = [r for r in expected if carrier.lower() in f"{r[0]} {r[1]}".lower()]
    expect(page.get_by_test_id("grid-count")).to_have_text(f"{len(matching)} of 60 rows")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_test_id("grid-copy").click()
    expect(page.get_by_test_id("grid-copy")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    lines = copied.strip().splitlines()
    assert lines[0] == "Carrier\tFlightNum"
    assert len(lines) == len(matching) + 1

    with page.expect_download() as download_info:
        page.get_by_test_id("grid-csv").click()
    text = download_info.value.path().read_text(encoding="utf-8")
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == ["Carrier", "FlightNum"]
    assert sorted(parsed[1:]) == sorted([[str(a), str(b)] for a, b in matching])


def test_group_by_days_since_epoch_is_charted(page, console_cluster):
    sql = "select DaysSinceEpoch, count(*) from airlineStats group by DaysSinceEpoch"
    page.goto("/console/query")
    run(page, sql)
    page.get_by_role("tab", name="Chart").click()
    canvas = page.get_by_test_id("chart")
    expect(canvas).to_have_attribute("data-kind", "line")
    expect(canvas).to_have_attribute("data-x", "DaysSinceEpoch")
    expect(canvas).to_have_attribute("data-series", "count(*)")
    expect(canvas).to_have_attribute("data-points", "4")
    painted = page.evaluate(
        """() => { const c = document.getElementById('chart-canvas');
                   const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                   let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"""
    )
    assert painted > 1000, "the chart canvas is blank"
    page.locator("#chart-kind").select_option("bar")
    expect(canvas).to_have_attribute("data-kind", "bar")
    screenshot(page, "query-chart")

    # a result with no key and number columns cannot be charted: the tab is disabled
    run(page, "select Carrier, Origin from airlineStats limit 3")
    expect(page.get_by_role("tab", name="Chart")).to_be_disabled()
    expect(page.get_by_role("tab", name="Results")).to_have_attribute("aria-selected", "true")


def test_history_survives_a_reload(page, console_cluster):
    page.goto("/console/query")
    run(page, "select count(*) from airlineStats")
    run(page, "select broken from nowhere_at_all")
    page.reload()
    page.get_by_role("tab", name="History").click()
    rows = page.get_by_test_id("history").locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("select broken from nowhere_at_all")
    expect(rows.nth(0)).to_contain_text("Error")
    expect(rows.nth(1)).to_contain_text("select count(*) from airlineStats")
    expect(rows.nth(1)).to_contain_text("OK")
    screenshot(page, "query-history")
    rows.nth(1).get_by_role("button").click()
    expect(page.locator("#editor .cm-content")).to_have_text("select count(*) from airlineStats")


def test_the_query_lives_in_the_url_for_back_forward_and_links(page, console_cluster):
    first = "select count(*) from airlineStats"
    second = "select Carrier from airlineStats limit 2"
    page.goto("/console/query")
    run(page, first)
    page.locator("#timeout").fill("4000")
    run(page, second)
    assert "timeout=4000" in page.url
    editor = page.locator("#editor .cm-content")
    page.go_back()
    expect(editor).to_have_text(first)
    expect(page.get_by_test_id("result-grid").locator("thead th")).to_have_text(["count(*)"])
    page.go_forward()
    expect(editor).to_have_text(second)
    expect(page.get_by_test_id("result-grid").locator("tbody tr")).to_have_count(2)

    # a shared link opens the console with the query run
    shared = page.url
    other = page.context.new_page()
    other.goto(shared)
    expect(other.locator("#editor .cm-content")).to_have_text(second)
    expect(other.get_by_test_id("result-grid").locator("tbody tr")).to_have_count(2)
    expect(other.locator("#timeout")).to_have_value("4000")


def test_editor_completes_table_and_column_names(page, console_cluster):
    page.goto("/console/query")
    expect(page.get_by_test_id("table-list")).to_contain_text("airlineStats")
    page.wait_for_function("() => document.querySelectorAll('.table-link').length > 0")
    type_query(page, "select * from airl")
    page.keyboard.press("Control+Space")
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("airlineStats")
    page.keyboard.press("Escape")
    type_query(page, "select count(*) from airlineStats where DaysSi")
    page.keyboard.press("Control+Space")
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("DaysSinceEpoch")


def test_tracing_shows_each_servers_and_segments_timings(page, console_cluster):
    sql = "select Carrier, count(*) from airlineStats group by Carrier order by Carrier limit 5"
    page.goto("/console/query")
    run(page, sql)
    expect(page.get_by_role("tab", name="Trace")).to_be_disabled()  # not traced
    page.locator("#tracing").check()
    run(page, sql)
    page.get_by_role("tab", name="Trace").click()
    table = page.get_by_test_id("trace-table")
    expect(table.locator("thead th")).to_have_text(
        ["Server", "Segment", "Operator", "Time (ms)", "Docs scanned"]
    )
    # the same servers and segments the broker's traceInfo names for this query
    traced = console_cluster.api("POST", "/sql", json={"sql": sql, "trace": True}).json()
    servers = sorted(traced["traceInfo"])
    segments = sorted(s["segment"] for i in traced["traceInfo"].values() for s in i["segments"])
    assert len(servers) == 2 and len(segments) == 4
    expect(table.locator("tr.trace-server")).to_have_count(2)
    for server in servers:
        expect(table.locator(f'tr.trace-server[data-server="{server}"] td').nth(2)).to_have_text(
            "Round trip (broker)"
        )
    for segment in segments:
        rows = table.locator(f'tr.trace-segment[data-segment="{segment}"]')
        expect(rows.first.locator("td").nth(2)).to_have_text("SegmentPruner")
        expect(rows.last.locator("td").nth(3)).to_have_text(re.compile(r"^\d+(\.\d+)?$"))
    screenshot(page, "query-trace")
