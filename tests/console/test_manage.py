"""Changing the cluster from the console: add schema and tables from pasted Pinot JSON, delete
a table, reload, rebalance, enable/disable a table, and an instance's tags and state. Every
change is checked through the REST API afterwards."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from sprig.stack.cluster import server_process
from sprig.stack.process import free_port
from tests.console.conftest import add_table, build_segments, screenshot, wait_online

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def paste(page, dialog, document) -> None:
    dialog.get_by_test_id("json-input").locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(document if isinstance(document, str) else json.dumps(document))


def test_add_schema_and_tables_from_pasted_json_then_delete_the_table(page, console_cluster):
    schema = console_cluster.api("GET", "/schemas/airlineStats").json()
    config = console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"]
    schema = {**schema, "schemaName": "pasted"}
    config = {**config, "tableName": "pasted"}
    page.goto("/console/tables")

    page.get_by_role("button", name="Add Schema").click()
    dialog = page.get_by_role("dialog")
    paste(page, dialog, '{"schemaName": "pasted",')
    dialog.get_by_role("button", name="Validate").click()
    expect(dialog.get_by_test_id("validation")).to_contain_text("Invalid JSON")
    paste(page, dialog, {"dimensionFieldSpecs": []})
    dialog.get_by_role("button", name="Create").click()
    expect(dialog.get_by_test_id("validation")).to_contain_text("schemaName")
    paste(page, dialog, schema)
    dialog.get_by_role("button", name="Validate").click()
    expect(dialog.get_by_test_id("validation")).to_contain_text("Valid")
    screenshot(page, "add-schema")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    assert console_cluster.api("GET", "/schemas/pasted").json()["schemaName"] == "pasted"

    # the realtime form refuses an offline config; the offline form takes it
    page.get_by_role("button", name="Add Realtime Table").click()
    dialog = page.get_by_role("dialog")
    paste(page, dialog, config)
    dialog.get_by_role("button", name="Create").click()
    expect(dialog.get_by_test_id("validation")).to_contain_text("adds REALTIME tables")
    dialog.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Add Offline Table").click()
    dialog = page.get_by_role("dialog")
    paste(page, dialog, {**config, "tableName": "no_schema_here"})
    dialog.get_by_role("button", name="Create").click()
    expect(dialog.get_by_test_id("validation")).to_contain_text("does not exist")
    paste(page, dialog, config)
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("tables-table")).to_contain_text("pasted")
    assert "OFFLINE" in console_cluster.api("GET", "/tables/pasted").json()

    page.get_by_role("link", name="pasted", exact=True).click()
    expect(page.get_by_test_id("table-title")).to_have_text("pasted")
    expect(page.get_by_test_id("segment-count")).to_have_text("0")
    page.get_by_role("button", name="Delete table").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("checkbox").check()
    dialog.get_by_role("button", name="Delete table").click()
    page.wait_for_url("**/console/tables")
    assert console_cluster.api("GET", "/tables/pasted").status_code == 404
    assert console_cluster.api("GET", "/schemas/pasted").status_code == 404


def test_reload_rebalance_and_table_state(page, console_cluster):
    page.goto("/console/tables/airlineStats")
    page.get_by_role("button", name="Reload all segments").click()
    expect(page.get_by_test_id("reload-status")).to_contain_text(
        f"{len(console_cluster.segments['airlineStats'])} of "
        f"{len(console_cluster.segments['airlineStats'])} segments reloaded"
    )

    page.get_by_role("button", name="Rebalance").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_test_id("rebalance-dry-run")).to_be_checked()
    dialog.get_by_role("button", name="Run rebalance").click()
    result = dialog.get_by_test_id("rebalance-result")
    expect(result).to_contain_text("segmentAssignment")
    expect(result).to_contain_text(console_cluster.segments["airlineStats"][0])
    screenshot(page, "rebalance")
    dialog.get_by_role("button", name="Close").click()

    toggle = page.get_by_test_id("enable-OFFLINE")
    expect(toggle).to_be_checked()
    toggle.uncheck()
    expect(page.locator("#notices")).to_contain_text("disabled")
    state = console_cluster.api("GET", "/tables/airlineStats/state", params={"type": "OFFLINE"})
    assert state.json()["state"] == "disabled"
    toggle.check()
    expect(page.locator("#notices")).to_contain_text("enabled")
    state = console_cluster.api("GET", "/tables/airlineStats/state", params={"type": "OFFLINE"})
    assert state.json()["state"] == "enabled"


def test_instance_tags_and_enable_disable(page, console_cluster):
    # an instance registered through the REST API but not running: shown as dead
    body = {"host": "127.0.0.1", "port": 1, "type": "SERVER", "tags": ["spare_OFFLINE"]}
    assert console_cluster.api("POST", "/instances", json=body).ok
    instance = "Server_127.0.0.1_1"
    try:
        page.goto("/console/cluster")
        row = page.get_by_test_id("instances-server").locator("tr", has_text=instance)
        expect(row).to_contain_text("Dead")
        expect(row).to_contain_text("spare_OFFLINE")

        row.get_by_role("button", name="Edit tags").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_test_id("tags-input").fill("")
        dialog.get_by_role("button", name="Save tags").click()
        expect(dialog).to_contain_text("at least one tag")
        dialog.get_by_test_id("tags-input").fill("spare_OFFLINE, spare_REALTIME")
        screenshot(page, "edit-tags")
        dialog.get_by_role("button", name="Save tags").click()
        expect(row).to_contain_text("spare_REALTIME")
        tags = console_cluster.api("GET", f"/instances/{instance}").json()["tags"]
        assert sorted(tags) == ["spare_OFFLINE", "spare_REALTIME"]

        row.get_by_role("button", name="Disable").click()
        expect(row).to_contain_text("Disabled")
        assert console_cluster.api("GET", f"/instances/{instance}").json()["enabled"] is False
        row.get_by_role("button", name="Enable").click()
        expect(row.get_by_role("button", name="Disable")).to_be_visible()
        assert console_cluster.api("GET", f"/instances/{instance}").json()["enabled"] is True
    finally:
        console_cluster.api("DELETE", f"/instances/{instance}")


def test_rebalance_onto_a_new_server_shows_the_job_until_done(
    page, console_cluster, pinot_examples, tmp_path
):
    schema = {**console_cluster.api("GET", "/schemas/airlineStats").json(), "schemaName": "moves"}
    config = {
        **console_cluster.api("GET", "/tables/airlineStats").json()["OFFLINE"],
        "tableName": "moves",
    }
    config.pop("metadata", None)
    add_table(
        console_cluster,
        schema,
        config,
        build_segments(pinot_examples, schema, config, tmp_path, 4),
    )
    wait_online(console_cluster, "moves")
    query_port = free_port()
    server = server_process(tmp_path, query_port, free_port(), console_cluster.env)
    server.start()
    try:
        server.wait_ready()
        new_id = f"Server_127.0.0.1_{query_port}"
        page.goto("/console/tables/moves")
        expect(page.get_by_test_id("segments-table")).not_to_contain_text(new_id)
        page.get_by_role("button", name="Rebalance").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_test_id("rebalance-dry-run").uncheck()
        dialog.get_by_role("button", name="Run rebalance").click()
        expect(dialog.get_by_test_id("rebalance-job")).to_contain_text("DONE", timeout=60_000)
        dialog.get_by_role("button", name="Close").click()
        expect(page.get_by_test_id("segments-table")).to_contain_text(new_id)
        expect(page.get_by_test_id("table-status")).to_have_text("GOOD")
        ideal = console_cluster.api("GET", "/tables/moves/idealstate").json()["OFFLINE"]
        assert any(new_id in replicas for replicas in ideal.values())

        page.get_by_role("button", name="Delete all segments").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete all").click()
        expect(page.get_by_test_id("segment-count")).to_have_text("0")
        assert console_cluster.api("GET", "/tables/moves/idealstate").json()["OFFLINE"] == {}
    finally:
        console_cluster.api("DELETE", "/tables/moves")
        console_cluster.api("DELETE", "/schemas/moves")
        server.stop()
        deadline = time.monotonic() + 30
        while console_cluster.api("DELETE", f"/instances/{new_id}").status_code != 200:
            assert time.monotonic() < deadline, f"could not drop {new_id}"
            time.sleep(0.5)


def test_schema_editor_validates_and_saves(page, console_cluster):
    page.goto("/console/tables/flights")
    page.get_by_role("tab", name="Schema").click()
    editor = page.get_by_test_id("schema-editor").locator(".cm-content")
    expect(editor).to_contain_text('"dimensionFieldSpecs": [')
    schema = console_cluster.api("GET", "/schemas/flights").json()

    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(json.dumps({**schema, "dimensionFieldSpecs": "not a list"}))
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_test_id("schema-feedback")).to_contain_text("dimensionFieldSpecs")
    assert console_cluster.api("GET", "/schemas/flights").json() == schema

    added = {"name": "ConsoleNote", "dataType": "STRING"}
    changed = {**schema, "dimensionFieldSpecs": [*schema["dimensionFieldSpecs"], added]}
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(json.dumps(changed))
    page.get_by_role("button", name="Save schema").click()
    expect(page.get_by_test_id("schema-feedback")).to_contain_text("Saved")
    stored = console_cluster.api("GET", "/schemas/flights").json()
    assert added["name"] in [spec["name"] for spec in stored["dimensionFieldSpecs"]]
