"""The subtask page and a table's task history as Django serves them: at Pinot's sub-task
route and at …/history, under the Minion tasks entry, with breadcrumbs back to the task
pages, the names from the URL escaped, and their scripts."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db
BASE = "/console/task-queue/TestTask/tables/t_OFFLINE"


def page_data(html: str) -> dict:
    match = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html)
    assert match, html
    return json.loads(match.group(1))


def test_the_subtask_page(client):
    response = client.get(f"{BASE}/task/Task_TestTask_1/sub-task/Task_TestTask_1_0")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-page="minions"' in html
    assert f'href="{BASE}/task/Task_TestTask_1"' in html  # back to its task
    assert page_data(html) == {"taskType": "TestTask", "table": "t_OFFLINE",
                               "task": "Task_TestTask_1", "subtask": "Task_TestTask_1_0"}  # fmt: skip
    for testid in ("subtask-fields", "subtask-error", "subtask-config", "subtask-log"):
        assert f'data-testid="{testid}"' in html
    assert "console/js/subtask_detail.js" in html
    assert finders.find("console/js/subtask_detail.js")


def test_the_history_page(client):
    html = client.get(f"{BASE}/history").content.decode()
    assert f'href="{BASE}"' in html
    assert page_data(html) == {"taskType": "TestTask", "table": "t_OFFLINE"}
    for testid in ("history-chart", "history-filter", "history-runs"):
        assert f'data-testid="{testid}"' in html
    assert "console/js/subtask_history.js" in html
    assert finders.find("console/js/subtask_history.js")


def test_names_from_the_url_never_become_markup(client):
    html = client.get(f"{BASE}/task/x/sub-task/%3Cb%3Ey").content.decode()
    assert "<b>y" not in html
    assert page_data(html)["subtask"] == "<b>y"
