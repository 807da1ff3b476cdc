"""Minion task manager pages, at Pinot's UI routes under /console/: the manager, a task
type's queue, one table's tasks of a type and one task. Like every console page they are
shells; their scripts read and act through the ``/tasks`` REST API. The few facts the API
has no endpoint for (registered types, tables that ran ad-hoc tasks) come in the page."""

from __future__ import annotations

from django.http import HttpRequest

from console.task_tables import registered_task_types, tables_that_ran
from console.views import console_page

SECTION = "minions"


@console_page(SECTION, "console/minion_task_manager.html")
def minion_task_manager(request: HttpRequest) -> dict:
    return {"page_data": {"registeredTypes": registered_task_types()}}


@console_page(SECTION, "console/task_queue.html")
def task_queue(request: HttpRequest, task_type: str) -> dict:
    return {
        "task_type": task_type,
        "page_data": {"taskType": task_type, "tablesThatRan": tables_that_ran(task_type),
                      "registered": task_type in registered_task_types()},
    }  # fmt: skip


@console_page(SECTION, "console/task_table.html")
def task_table(request: HttpRequest, task_type: str, table: str) -> dict:
    return {"task_type": task_type, "task_table": table,
            "page_data": {"taskType": task_type, "table": table}}  # fmt: skip


@console_page(SECTION, "console/task_detail.html")
def task_detail(request: HttpRequest, task_type: str, table: str, task: str) -> dict:
    return {"task_type": task_type, "task_table": table, "task_name": task,
            "page_data": {"taskType": task_type, "table": table, "task": task}}  # fmt: skip
