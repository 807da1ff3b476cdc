"""The controller's health check and its OpenAPI schema."""

import json

import yaml
from django.core.management import call_command


def test_health_answers_ok(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.content == b"OK"


def test_openapi_schema_builds_and_validates(tmp_path):
    out = tmp_path / "openapi.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    assert schema["openapi"].startswith("3.")
    assert "/health" in schema["paths"]


def test_swagger_ui_is_served_at_help_from_local_assets(client):
    response = client.get("/help")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower(), "the machines have no internet: assets must be local"


def test_the_openapi_schema_is_json_at_openapi_json_and_yaml_at_openapi_yaml(client):
    as_json = client.get("/openapi.json")
    assert as_json.status_code == 200
    assert as_json["Content-Type"].startswith("application/vnd.oai.openapi+json")
    schema = json.loads(as_json.content)
    as_yaml = client.get("/openapi.yaml")
    assert as_yaml.status_code == 200
    assert as_yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(as_yaml.content) == schema
