"""The cluster manager, tables, table page and ZooKeeper browser, driven in a
real headless Chromium against a live controller and servers."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_cluster_page_lists_instances_and_tenants(page, console_cluster):
    page.goto("/console/cluster")
    servers = page.get_by_test_id("instances-server")
    for server in console_cluster.servers:
        row = servers.locator("tr", has_text=server)
        expect(row).to_contain_text("Alive")
        expect(row).to_contain_text("Enabled")
        expect(row).to_contain_text("DefaultTenant_OFFLINE")
    expect(page.get_by_test_id("instances-controller")).to_contain_text("Controller_")
    tenant = page.get_by_test_id("tenants-table").locator("tr", has_text="DefaultTenant")
    expect(tenant.locator("td").nth(1)).to_have_text("2")  # servers
    expect(tenant.locator("td").nth(3)).to_have_text("2")  # tables: airlineStats, flights
    expect(page.locator("nav.mainnav a.active")).to_have_text("Cluster")
    screenshot(page, "cluster")
    # at 800 px every server row's action buttons stay inside the table's box
    page.set_viewport_size({"width": 800, "height": 900})
    box = servers.bounding_box()
    for button in servers.locator("td.row-actions .btn").all():
        right = button.bounding_box()
        assert right["x"] + right["width"] <= box["x"] + box["width"] + 0.5, (right, box)


def test_tables_page_lists_tables_with_size_segments_and_status(page, console_cluster):
    page.goto("/console/tables")
    row = page.get_by_test_id("tables-table").locator(
        "tr", has=page.get_by_role("link", name="airlineStats", exact=True)
    )
    expect(row.locator("td").nth(4)).to_have_text(
        str(len(console_cluster.segments["airlineStats"]))
    )
    expect(row).to_contain_text("GOOD")
    expect(row).to_contain_text("OFFLINE")
    expect(row.locator("td").nth(2)).to_have_text(re.compile(r"\d+(\.\d)? (B|KB|MB)"))
    screenshot(page, "tables")


def test_table_page_shows_good_segments_and_deleting_one_updates_the_count(page, console_cluster):
    segments = console_cluster.segments["flights"]
    page.goto("/console/tables/flights")
    expect(page.get_by_test_id("segment-count")).to_have_text(str(len(segments)))
    rows = page.get_by_test_id("segments-table").locator("tbody tr")
    expect(rows).to_have_count(len(segments))
    for segment in segments:
        row = page.locator(f'tr[data-segment="{segment}"]')
        expect(row).to_contain_text("GOOD")
        expect(row).to_contain_text("ONLINE")
    expect(page.get_by_test_id("table-status")).to_have_text("GOOD")
    expect(page.get_by_test_id("server-count")).to_have_text("2")
    expect(page.get_by_test_id("broker-count")).to_have_text("1")
    screenshot(page, "table")

    victim = segments[0]
    page.locator(f'tr[data-segment="{victim}"]').get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_test_id("segment-count")).to_have_text(str(len(segments) - 1))
    expect(page.locator(f'tr[data-segment="{victim}"]')).to_have_count(0)
    listed = console_cluster.api("GET", "/segments/flights").json()
    assert victim not in str(listed)
    console_cluster.segments["flights"] = segments[1:]


def test_segment_metadata_and_replicas(page, console_cluster):
    segment = console_cluster.segments["airlineStats"][0]
    page.goto("/console/tables/airlineStats")
    page.get_by_role("button", name=segment).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("External view")
    expect(dialog.get_by_test_id("segment-metadata")).to_contain_text("segment.total.docs")
    screenshot(page, "segment")


def test_table_config_editor_reports_invalid_json_and_saves_a_valid_change(page, console_cluster):
    page.goto("/console/tables/airlineStats")
    page.get_by_role("tab", name="Table config").click()
    editor = page.get_by_test_id("config-editor").locator(".cm-content")
    expect(editor).to_contain_text('"tableName": "airlineStats_OFFLINE"')
    config = console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"]

    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("garbage")
    page.get_by_role("button", name="Save config").click()
    expect(page.get_by_test_id("config-feedback")).to_contain_text("Invalid JSON")
    assert console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"] == config

    # a config the controller rejects: its message is shown and nothing is stored
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(json.dumps({**config, "tableType": "SIDEWAYS"}))
    page.get_by_role("button", name="Save config").click()
    expect(page.get_by_test_id("config-feedback")).to_contain_text("SIDEWAYS")
    assert console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"] == config
    screenshot(page, "table-config")

    changed = {**config, "metadata": {"customConfigs": {"owner": "console-test"}}}
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(json.dumps(changed))
    page.get_by_role("button", name="Save config").click()
    expect(page.get_by_test_id("config-feedback")).to_contain_text("Saved")
    stored = console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"]
    assert stored["metadata"]["customConfigs"] == {"owner": "console-test"}


def test_zookeeper_browser_walks_to_a_znode_and_shows_its_json_and_stat(page, console_cluster):
    root = f"/{console_cluster.cluster_name}"
    page.goto("/console/zookeeper")
    tree = page.get_by_test_id("zk-tree")
    expect(page.get_by_test_id("zk-path")).to_have_text(root)
    tree.locator(f'button.zk-name[data-path="{root}/PROPERTYSTORE"]').click()
    tree.locator(f'button.zk-name[data-path="{root}/PROPERTYSTORE/SCHEMAS"]').click()
    tree.locator(f'button.zk-name[data-path="{root}/PROPERTYSTORE/SCHEMAS/airlineStats"]').click()
    expect(page.get_by_test_id("zk-path")).to_have_text(
        f"{root}/PROPERTYSTORE/SCHEMAS/airlineStats"
    )
    # a Helix ZNRecord, pretty-printed
    expect(page.get_by_test_id("zk-data")).to_contain_text('"id": "airlineStats"')
    expect(page.get_by_test_id("zk-data")).to_contain_text('"schemaJSON":')
    # the schema inside the record, decoded
    page.get_by_test_id("zk-expand").check()
    expect(page.get_by_test_id("zk-data")).to_contain_text('"schemaJSON": {')
    page.get_by_test_id("zk-expand").uncheck()
    expect(page.get_by_test_id("zk-data")).to_contain_text('"schemaJSON": "{')
    stat = page.get_by_test_id("zk-stat")
    expect(stat).to_contain_text("numChildren")
    expect(stat).to_contain_text("dataLength")
    screenshot(page, "zookeeper")

    # the selected path is in the URL: a reload (or a shared link) opens the same znode
    assert "path=" in page.url
    page.reload()
    expect(page.get_by_test_id("zk-path")).to_have_text(
        f"{root}/PROPERTYSTORE/SCHEMAS/airlineStats"
    )
    expect(page.get_by_test_id("zk-data")).to_contain_text('"id": "airlineStats"')


def test_zookeeper_browser_reports_a_missing_znode(page, console_cluster):
    page.goto(f"/console/zookeeper?path=/{console_cluster.cluster_name}/NO_SUCH_NODE")
    expect(page.locator("#zk-stat")).to_contain_text("does not exist")


def test_an_unknown_table_page_says_so(page, console_cluster):
    page.goto("/console/tables/no_such_table")
    expect(page.get_by_role("alert")).to_contain_text("no_such_table")
    expect(page.get_by_role("alert")).to_contain_text("does not exist")
    expect(page.locator("#table-body")).to_be_hidden()
    expect(page.get_by_role("button", name="Delete table")).to_be_hidden()


def test_table_page_lists_config_keys_sprig_does_not_act_on(page, console_cluster):
    page.goto("/console/tables/airlineStats")
    warnings = page.get_by_test_id("config-warnings")
    expect(warnings).to_be_visible()
    expect(warnings).to_contain_text("OFFLINE · tierConfigs")
    expect(warnings).to_contain_text("tiered storage is not implemented")
    page.get_by_role("tab", name="Table config").click()
    page.get_by_role("button", name="Validate").first.click()
    expect(page.get_by_test_id("config-feedback")).to_contain_text("Valid, with notes")
    screenshot(page, "table-warnings")
