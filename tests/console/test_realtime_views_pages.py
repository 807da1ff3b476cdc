"""The real-time panel of the table page as Django serves it: present (hidden until the
script finds a REALTIME config) on every table page, with its own script, next to the
table page's other panels."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_the_table_page_carries_the_realtime_panel_and_its_script(client):
    response = client.get("/console/tables/clicks")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-table="clicks"' in html
    assert 'data-testid="realtime-panel"' in html
    assert 'id="realtime" class="card" data-testid="realtime-panel" hidden' in html
    assert 'data-testid="config-warnings"' in html  # the warnings panel stays
    assert "console/js/table_realtime.js" in html and "console/js/table.js" in html
    assert finders.find("console/js/table_realtime.js")
    # the operations and the chart, with the modules the panel's script imports
    for testid in ("rt-pause", "rt-resume", "rt-force-commit", "rt-pause-status", "rt-chart",
                   "rt-rate-chart", "rt-lag-chart"):  # fmt: skip
        assert f'data-testid="{testid}"' in html, testid
    assert 'id="rt-chart" data-testid="rt-chart" hidden' in html
    for module in ("table_realtime_ops.js", "table_realtime_chart.js"):
        assert finders.find(f"console/js/{module}"), module


def test_a_table_name_is_escaped_into_the_page(client):
    html = client.get('/console/tables/x"><b>y').content.decode()
    assert "<b>y" not in html
