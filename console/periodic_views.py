"""The periodic tasks page (Pinot's home-page "Registered Periodic Tasks" with its Run dialog).
A shell like every console page: its script reads each task's frequency and last run from
``GET /periodictask/status`` and runs one with ``GET /periodictask/run``."""

from __future__ import annotations

from django.http import HttpRequest

from console.views import console_page


@console_page("tasks", "console/periodic_tasks.html")
def periodic_tasks(request: HttpRequest) -> dict:
    return {}
