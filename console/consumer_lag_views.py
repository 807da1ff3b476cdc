"""The "Kafka consumers" pages: the groups with the alert rules and recent alerts, and one
group's page. Shells whose scripts read /consumerGroups, the lag history and the alert rules
and events from the controller's REST API. The first page's old address, /console/consumer-lag
(?group=G), redirects here."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from console.views import console_page


@console_page("consumers", "console/consumers.html")
def consumers(request: HttpRequest) -> dict:
    return {"rule_form": True}


@console_page("consumers", "console/consumer_group.html")
def consumer_group(request: HttpRequest, group: str) -> dict:
    return {"group": group, "kafka_cluster": settings.KAFKA_CLUSTER_NAME, "rule_form": False}


def consumer_lag(request: HttpRequest) -> HttpResponse:
    group = request.GET.get("group")
    if group:
        return redirect(reverse("console-consumer-group", args=[group]))
    return redirect("console-consumers")
