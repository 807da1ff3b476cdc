"""The "Kafka consumers" pages as Django serves them: the list and a group's page, their place
in the navigation, the group id handed to the script as JSON (escaped), and the old address
redirecting here."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_the_list_page_is_in_the_navigation_and_loads_its_script(client):
    response = client.get("/console/consumers")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/console/consumers"' in html and "Kafka consumers" in html
    assert "console/js/consumers.js" in html
    for script in ("consumers.js", "consumer_group.js", "consumers_common.js"):
        assert finders.find(f"console/js/{script}")
    for testid in ("groups", "rules", "rule-form", "events"):
        assert f'data-testid="{testid}"' in html


def test_a_group_page_hands_its_group_to_the_script_as_json_never_as_markup(client):
    response = client.get("/console/consumers/team/</script><b>x")
    assert response.status_code == 200
    html = response.content.decode()
    match = re.search(r'<script id="group-id" type="application/json">(.*?)</script>', html)
    assert match and json.loads(match.group(1)) == "team/</script><b>x"
    assert "<b>x" not in html
    for testid in ("partitions", "lag-chart", "rules", "events", "burrow-link"):
        assert f'data-testid="{testid}"' in html
    assert 'data-testid="rule-form"' not in html  # rules are added on the list page
    assert "/v3/kafka/local/consumer/team%2F%3C%2Fscript%3E%3Cb%3Ex/lag" in html


def test_the_old_address_redirects(client):
    assert client.get("/console/consumer-lag")["Location"] == "/console/consumers"
    moved = client.get("/console/consumer-lag", {"group": "team/a b"})
    assert moved.status_code == 302 and moved["Location"] == "/console/consumers/team/a%20b"
