"""The cluster manager, tables, table page, ZooKeeper browser and periodic tasks, driven in a
real headless Chromium against a live controller and servers."""

from __future__ import annotations

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
