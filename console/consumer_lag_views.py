"""The "Kafka consumer lag" page: a shell whose script reads /consumerGroups, the lag history
and the alert rules and events from the controller's REST API."""

from __future__ import annotations

from django.http import HttpRequest

from console.views import console_page


@console_page("consumer-lag", "console/consumer_lag.html")
def consumer_lag(request: HttpRequest) -> dict:
    return {"selected_group": request.GET.get("group", "")}
