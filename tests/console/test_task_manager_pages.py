"""The minion task manager pages as Django serves them (no browser or cluster): Pinot's routes
under /console/, the navigation, the page data the scripts read, and the tables that ran
ad-hoc tasks of a type, which the /tables?taskType= filter leaves out."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.staticfiles import finders

from console.task_tables import tables_that_ran
from tasks import registry
from tasks.models import Task, TaskQueue

pytestmark = pytest.mark.django_db

TASK = "Task_TestTask_0a1b2c3d_1700000000000"
PAGES = {
    "/console/minion-task-manager": "tasks_manager.js",
    "/console/task-queue/MergeRollupTask": "tasks_queue.js",
    "/console/task-queue/MergeRollupTask/tables/airlineStats_OFFLINE": "tasks_table.js",
    f"/console/task-queue/TestTask/tables/events_REALTIME/task/{TASK}": "tasks_task.js",
}


def page_data(html: str) -> dict:
    match = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "the page carries no page-data"
    return json.loads(match.group(1))


def record_task(task_type: str, table: str, created_ms: int, name: str) -> Task:
    queue, _ = TaskQueue.objects.get_or_create(task_type=task_type, defaults={"created_ms": 1})
    return Task.objects.create(name=name, queue=queue, task_type=task_type, table_name=table,
                               minion_instance_tag="minion_untagged", timeout_ms=1000,
                               created_ms=created_ms)  # fmt: skip


@pytest.mark.parametrize(("path", "script"), PAGES.items())
def test_each_page_renders_in_the_minion_tasks_section_with_its_local_script(client, path, script):
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    active = re.findall(r'<a href="([^"]+)" data-nav="minions" class="active"', html)
    assert active == ["/console/minion-task-manager"]
    assert "csrftoken" in response.cookies
    assets = re.findall(r'(?:src|href)="/static/([^"]+)"', html)
    assert f"console/js/{script}" in assets
    for asset in assets:
        assert finders.find(asset), f"{asset} is not served"


def test_the_navigation_links_the_task_manager_once(client):
    html = client.get("/console/query").content.decode()
    assert html.count('href="/console/minion-task-manager"') == 1
    assert ">Minion tasks</a>" in html


@pytest.fixture
def page_only_type():
    """A registered type no task ran yet (the generator and executor are never loaded)."""
    registry.register("PageOnlyTask", generator="x:Generator", executor="x:Executor")
    yield "PageOnlyTask"
    registry.unregister("PageOnlyTask")


def test_the_manager_knows_the_registered_types_even_without_a_queue(client, page_only_type):
    data = page_data(client.get("/console/minion-task-manager").content.decode())
    assert page_only_type in data["registeredTypes"]
    assert data["registeredTypes"] == registry.task_types()


def test_the_table_and_task_pages_carry_their_names_and_breadcrumbs(client):
    html = client.get(next(p for p in PAGES if "/task/" in p)).content.decode()
    assert page_data(html) == {"taskType": "TestTask", "table": "events_REALTIME", "task": TASK}
    assert 'href="/console/task-queue/TestTask"' in html
    assert 'href="/console/task-queue/TestTask/tables/events_REALTIME"' in html
    assert TASK in html


def test_names_are_escaped_in_the_page(client):
    html = client.get("/console/task-queue/%3Cb%3EX/tables/t%3Cscript%3E_OFFLINE").content.decode()
    assert "<b>X" not in html and "t<script>" not in html
    assert page_data(html) == {"taskType": "<b>X", "table": "t<script>_OFFLINE"}


def test_the_queue_page_lists_tables_that_ran_the_type_whatever_their_config(client):
    record_task("AdhocOnlyTask", "adhocOnly_OFFLINE", 1_000, "Task_AdhocOnlyTask_a_1000")
    record_task("AdhocOnlyTask", "adhocOnly_OFFLINE", 3_000, "Task_AdhocOnlyTask_b_3000")
    record_task("AdhocOnlyTask", "events_REALTIME", 2_000, "Task_AdhocOnlyTask_c_2000")
    record_task("OtherTask", "other_OFFLINE", 5_000, "Task_OtherTask_d_5000")
    data = page_data(client.get("/console/task-queue/AdhocOnlyTask").content.decode())
    assert data["tablesThatRan"] == ["adhocOnly_OFFLINE", "events_REALTIME"]
    assert (
        data["registered"] is False
    )  # no plugin registers this type (other tests register TestTask in this process)
    assert tables_that_ran("NoSuchTask") == []
