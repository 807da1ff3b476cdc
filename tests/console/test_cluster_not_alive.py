"""The cluster page points out instances that are registered but not alive, and sees one come
and go without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_instances_not_alive_are_listed_and_counted(page, console_cluster):
    page.goto("/console/cluster")
    expect(page.get_by_test_id("instances-server")).to_contain_text("Alive")
    expect(page.get_by_test_id("not-alive")).to_be_hidden()

    # registered through the REST API, with no process behind it: as after a crash
    body = {"host": "127.0.0.1", "port": 2, "type": "SERVER", "tags": ["spare_OFFLINE"]}
    assert console_cluster.api("POST", "/instances", json=body).ok
    instance = "Server_127.0.0.1_2"
    try:
        notice = page.get_by_test_id("not-alive")
        expect(notice).to_be_visible(timeout=15_000)  # the page reads the instances again
        expect(notice).to_contain_text("1 not alive")
        expect(notice.locator(f'li[data-instance="{instance}"]')).to_have_text(
            f"{instance} (server)"
        )
        expect(page.get_by_test_id("tile-server-not-alive")).to_have_text("1 not alive")
        first = page.get_by_test_id("instances-server").locator("tbody tr").first
        expect(first).to_contain_text(instance)
        expect(first).to_contain_text("Dead")
        screenshot(page, "cluster-not-alive")
    finally:
        assert console_cluster.api("DELETE", f"/instances/{instance}").ok
    expect(page.get_by_test_id("not-alive")).to_be_hidden(timeout=15_000)
    expect(page.get_by_test_id("tile-server-not-alive")).to_have_count(0)
