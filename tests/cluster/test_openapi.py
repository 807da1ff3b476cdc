"""Every controller endpoint is in the OpenAPI schema served for /help."""

from __future__ import annotations

import orjson
import pytest
from django.urls import URLPattern, get_resolver

pytestmark = pytest.mark.django_db

PINOT_PATHS = [
    "/schemas", "/schemas/validate", "/schemas/{name}",
    "/tables", "/tables/validate", "/tables/{table}", "/tables/{table}/schema",
    "/tables/{table}/idealstate", "/tables/{table}/externalview", "/tables/{table}/size",
    "/tables/{table}/segmentsStatus", "/tables/{table}/instances", "/tables/{table}/state",
    "/tables/{table}/rebalance", "/rebalanceStatus/{job_id}",
    "/segments", "/v2/segments", "/segments/{table}", "/segments/{table}/{segment}",
    "/segments/{table}/{segment}/metadata", "/segments/{table}/reload",
    "/segments/{table}/reset", "/segments/segmentReloadStatus/{job_id}",
    "/tenants", "/tenants/{name}", "/instances", "/instances/{instance}",
    "/instances/{instance}/updateTags", "/instances/{instance}/state",
    "/cluster/info", "/cluster/configs", "/zk/ls", "/zk/lsl", "/zk/get", "/zk/stat",
    "/periodictask/names", "/periodictask/run", "/sql",
]  # fmt: skip


def _cluster_routes() -> list[str]:
    from cluster import urls

    routes = []
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        route = "/" + str(pattern.pattern).replace("<str:", "{").replace(">", "}")
        routes.append(route)
    return routes


def test_every_endpoint_is_documented(client):
    response = client.get("/openapi.json")
    assert response.status_code == 200
    schema = orjson.loads(response.content)
    paths = set(schema["paths"])
    for route in PINOT_PATHS + _cluster_routes():
        assert route in paths, f"{route} missing from the OpenAPI schema"
    for route, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), f"{method.upper()} {route} has no summary"
    assert get_resolver().resolve("/help")
    assert client.get("/help").status_code == 200
