"""The periodic tasks page as Django serves it: at /console/tasks under the Tasks entry of the
navigation, loading the script that reads /periodictask/status (not the browser's storage)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_the_page_loads_the_status_script(client):
    response = client.get("/console/tasks")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-page="tasks"' in html
    assert "console/js/periodic_tasks.js" in html
    assert 'data-testid="periodic-tasks"' in html
    assert 'data-testid="task-table"' in html
    text = Path(finders.find("console/js/periodic_tasks.js")).read_text()
    assert "/periodictask/status" in text and "/periodictask/run" in text
    assert "localStorage" not in text


def test_the_old_browser_storage_page_is_gone(client):
    assert finders.find("console/js/tasks.js") is None
    assert "console/js/tasks.js" not in client.get("/console/tasks").content.decode()
