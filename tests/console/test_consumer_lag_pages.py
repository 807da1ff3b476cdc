"""The "Kafka consumer lag" console page as Django serves it: its route, its place in the
navigation, the group asked for in the URL handed to the script (escaped), and its script."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_the_page_is_in_the_navigation_and_loads_its_script(client):
    response = client.get("/console/consumer-lag")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<a href="/console/consumer-lag"' in html or 'href="/console/consumer-lag"' in html
    assert "Kafka consumer lag" in html
    assert "console/js/consumer_lag.js" in html
    assert finders.find("console/js/consumer_lag.js")
    for testid in ("groups", "partitions", "lag-chart", "rules", "rule-form", "events"):
        assert f'data-testid="{testid}"' in html


def test_the_group_in_the_url_reaches_the_script_as_json_never_as_markup(client):
    html = client.get("/console/consumer-lag", {"group": "</script><b>x"}).content.decode()
    match = re.search(r'<script id="selected-group" type="application/json">(.*?)</script>', html)
    assert match and json.loads(match.group(1)) == "</script><b>x"
    assert "<b>x" not in html
