"""Console pages: HTML shells whose scripts call the controller's public REST API.

The pages hold no data of their own; everything shown or changed goes through the same
endpoints that scripts use, so the console can never do what the API refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie

# The top navigation, in order: (section key, label, url name).
NAVIGATION = (
    ("query", "Query", "console-query"),
    ("cluster", "Cluster", "console-cluster"),
    ("tables", "Tables", "console-tables"),
    ("zookeeper", "ZooKeeper", "console-zookeeper"),
    ("tasks", "Tasks", "console-tasks"),
    ("minions", "Minion tasks", "console-minion-task-manager"),
    ("consumers", "Kafka consumers", "console-consumers"),
)


def console_page(section: str, template: str) -> Callable:
    """A page of the console: login required when auth is on, CSRF cookie always set (the
    scripts send it back as X-CSRFToken on every write)."""

    def decorate(view: Callable[..., dict]) -> Callable[..., HttpResponse]:
        @wraps(view)
        @ensure_csrf_cookie
        def page(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if settings.AUTH_ENABLED and not request.user.is_authenticated:
                query = urlencode({"next": request.get_full_path()})
                return redirect(f"{reverse('console-login')}?{query}")
            context = {
                "cluster_name": settings.CLUSTER_NAME,
                "auth_enabled": settings.AUTH_ENABLED,
                "section": section,
                "navigation": [(key, label, reverse(name)) for key, label, name in NAVIGATION],
                **view(request, *args, **kwargs),
            }
            return render(request, template, context)

        return page

    return decorate


def home(request: HttpRequest) -> HttpResponse:
    return redirect("console-query")


@console_page("query", "console/query.html")
def query(request: HttpRequest) -> dict:
    return {}


@console_page("cluster", "console/cluster.html")
def cluster(request: HttpRequest) -> dict:
    return {}


@console_page("tables", "console/tables.html")
def tables(request: HttpRequest) -> dict:
    return {}


@console_page("tables", "console/table.html")
def table(request: HttpRequest, name: str) -> dict:
    return {"table_name": name}


@console_page("zookeeper", "console/zookeeper.html")
def zookeeper(request: HttpRequest) -> dict:
    return {}
