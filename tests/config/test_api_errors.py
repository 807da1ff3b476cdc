"""The REST API answers every error in Pinot's JSON (``{"code", "error"}``), with DEBUG on or
off; console pages keep HTML errors; the local settings keep Django's debug pages off."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def client(request, settings):
    settings.DEBUG = request.param
    settings.ROOT_URLCONF = "tests.config.crash_urls"
    return Client(raise_request_exception=False)


def _error(response, code: int) -> str:
    assert response.status_code == code
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    assert body["code"] == code
    return body["error"]


def test_unknown_api_paths_are_json_404s(client):
    assert "/segments/t//metadata" in _error(client.get("/segments/t//metadata"), 404)
    assert "/no/such/path" in _error(client.post("/no/such/path", {}), 404)


def test_method_not_allowed_is_json(client):
    assert "DELETE" in _error(client.delete("/schemas"), 405)
    _error(client.post("/health"), 405)  # a DRF view rendered as text/plain on success


def test_crashes_are_json_500s_without_a_stack_trace(client):
    for path, message in (("/crash/plain", "plain view failed"), ("/crash/api", "api view failed")):
        error = _error(client.get(path), 500)
        # an id to find it in the log; not the exception, whose text may name files or hosts
        assert "error id" in error and path in error
        assert message not in error and "RuntimeError" not in error
        assert "Traceback" not in error and "SECRET_KEY" not in error


def test_console_pages_keep_html_errors(settings):
    settings.DEBUG = False
    response = Client().get("/console/no-such-page")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_local_settings_keep_debug_pages_off():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    code = "import config.settings.local as s; print(s.DEBUG)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))  # fmt: skip
    assert out.stdout.strip() == "False"
