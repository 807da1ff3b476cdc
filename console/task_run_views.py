"""Two more minion task pages: one subtask (Pinot's ``…/task/<task>/sub-task/<subtask>``) and
a table's run history for a task type (``…/tables/<table>/history``, a page Pinot lacks).
Shells like the other task pages: their scripts read ``/tasks/task/<task>/debug`` and
``/tasks/<type>/<table>/debug``."""

from __future__ import annotations

from django.http import HttpRequest

from console.views import console_page

SECTION = "minions"


@console_page(SECTION, "console/subtask_detail.html")
def subtask_detail(request: HttpRequest, task_type: str, table: str, task: str,
                   subtask: str) -> dict:  # fmt: skip
    return {"task_type": task_type, "task_table": table, "task_name": task, "subtask": subtask,
            "page_data": {"taskType": task_type, "table": table, "task": task,
                          "subtask": subtask}}  # fmt: skip


@console_page(SECTION, "console/subtask_history.html")
def task_history(request: HttpRequest, task_type: str, table: str) -> dict:
    return {"task_type": task_type, "task_table": table,
            "page_data": {"taskType": task_type, "table": table}}  # fmt: skip
