"""Cross-origin protection's rule, request by request: browsers' cross-site writes are
refused, same-origin ones and requests from no browser pass (the real controller process is
attacked in tests/cluster_e2e/test_request_safety.py)."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from cluster.api.cross_origin import cross_origin_refusal

OWN = "http://testserver"


@pytest.mark.parametrize(
    ("method", "headers", "refused"),
    [
        ("POST", {}, False),  # curl, engine processes, minions
        ("POST", {"HTTP_ORIGIN": OWN}, False),  # the console's own fetch
        ("POST", {"HTTP_ORIGIN": OWN, "HTTP_SEC_FETCH_SITE": "same-origin"}, False),
        ("POST", {"HTTP_SEC_FETCH_SITE": "none"}, False),  # typed in the address bar
        ("GET", {"HTTP_ORIGIN": "http://evil.example"}, False),  # reads change nothing
        ("POST", {"HTTP_ORIGIN": "http://evil.example"}, True),
        ("DELETE", {"HTTP_ORIGIN": "http://evil.example"}, True),
        ("PUT", {"HTTP_ORIGIN": "null"}, True),  # a sandboxed frame
        ("POST", {"HTTP_ORIGIN": "http://testserver.evil.example"}, True),
        ("POST", {"HTTP_ORIGIN": "https://testserver:8443"}, True),  # another port
        ("POST", {"HTTP_SEC_FETCH_SITE": "cross-site"}, True),  # Origin stripped
        ("POST", {"HTTP_SEC_FETCH_SITE": "same-site", "HTTP_ORIGIN": "http://a.testserver"},
         True),
        ("POST", {"HTTP_SEC_FETCH_SITE": "cross-site", "HTTP_ORIGIN": OWN}, True),
        ("POST", {"HTTP_SEC_FETCH_SITE": "cross-site", "HTTP_ORIGIN": "https://console.example"},
         False),  # listed in SPRIG_TRUSTED_ORIGINS
    ],
)  # fmt: skip
def test_state_changing_requests_from_other_origins_are_refused(settings, method, headers,
                                                                refused):  # fmt: skip
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example"]
    request = RequestFactory().generic(method, "/tasks/execute", **headers)
    assert (cross_origin_refusal(request) is not None) is refused
