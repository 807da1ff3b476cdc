"""engine.runtime.outbound: a user's URL is called only on allowed schemes and hosts and at
public addresses (or networks an operator listed); every resolved address is checked, the
request goes to the checked one, redirects are not followed."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.runtime.outbound import OutboundPolicy, OutboundRefusedError, post_json

ANY_HOST = OutboundPolicy.of(["https", "http"], ["*"], [], "SPRIG_WEBHOOK")


def fixed(*addresses: str):
    """A resolver that answers ``addresses`` for every name, as a rebinding DNS server might."""
    return lambda host, port: list(addresses)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),  # cloud metadata
        ("http://127.0.0.1:8080/hook", "loopback"),
        ("http://localhost:9000/tasks/execute", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),  # IPv4-mapped
        ("http://2130706433/hook", "loopback"),  # 127.0.0.1 as one decimal number
        ("http://0.0.0.0:9000/", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://192.168.0.10/hook", "private"),
        ("http://100.64.0.1/hook", "private"),  # carrier-grade NAT
        ("http://224.0.0.1/hook", "loopback, private"),  # multicast
        ("ftp://93.184.215.14/hook", "SPRIG_WEBHOOK_SCHEMES"),
        ("file:///etc/passwd", "SPRIG_WEBHOOK_SCHEMES"),
        ("gopher://93.184.215.14/", "SPRIG_WEBHOOK_SCHEMES"),
        ("http://user:pw@93.184.215.14/", "without credentials"),
        ("http:///nohost", "must name a host"),
    ],
)  # fmt: skip
def test_non_public_addresses_and_other_schemes_are_refused(url, why):
    with pytest.raises(OutboundRefusedError, match=why):
        ANY_HOST.check(url)


def test_every_address_of_a_name_must_be_public():
    assert ANY_HOST.check("https://hooks.example/x?a=1", fixed("93.184.215.14")).path == "/x?a=1"
    with pytest.raises(OutboundRefusedError, match=r"169\.254\.169\.254"):
        ANY_HOST.check("https://hooks.example/x", fixed("93.184.215.14", "169.254.169.254"))


def test_listed_networks_and_host_globs():
    policy = OutboundPolicy.of(["http"], ["*.corp.example", "10.0.0.7"], ["10.0.0.0/8"],
                               "SPRIG_WEBHOOK")  # fmt: skip
    assert policy.check("http://alerts.corp.example/h", fixed("10.1.1.1")).address == "10.1.1.1"
    assert policy.check("http://10.0.0.7/h").address == "10.0.0.7"
    with pytest.raises(OutboundRefusedError, match="SPRIG_WEBHOOK_NETWORKS"):
        policy.check("http://alerts.corp.example/h", fixed("127.0.0.1"))
    with pytest.raises(OutboundRefusedError, match="SPRIG_WEBHOOK_HOSTS"):
        policy.check("http://elsewhere.example/h", fixed("93.184.215.14"))


class _Recorder:
    """A real HTTP server that records each request and answers ``status`` (with a Location
    to ``location`` when set)."""

    def __init__(self, status: int = 204, location: str | None = None):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append((self.headers["Host"], self.path, body))
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "13")
                self.end_headers()
                self.wfile.write(b"secret body\r\n")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_request_goes_to_the_checked_address_and_redirects_are_not_followed():
    loopback = OutboundPolicy.of(["http"], ["*"], ["127.0.0.1/32"], "SPRIG_WEBHOOK")
    elsewhere, hook = _Recorder(), None
    try:
        hook = _Recorder(302, location=f"http://127.0.0.1:{elsewhere.port}/stolen")
        # the name resolves (once, when checked) to the recorder: no second lookup happens
        target = loopback.check(f"http://hooks.example:{hook.port}/alert", fixed("127.0.0.1"))
        assert post_json(target, {"state": "firing"}, timeout_s=5) == 302
        assert hook.seen == [(f"hooks.example:{hook.port}", "/alert", b'{"state":"firing"}')]
        assert elsewhere.seen == []
    finally:
        elsewhere.close()
        if hook is not None:
            hook.close()
