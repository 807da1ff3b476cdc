"""Which hosts a URL from a request may send the cluster to, and sending it there: only public
addresses or those an operator allowed, every resolved address checked, the request sent to
the checked one, no redirect followed (no network: addresses, localhost and a local server)."""

from __future__ import annotations

import ipaddress
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.runtime.outbound import OutboundPolicy, OutboundRefused, post_json


def fixed(*addresses: str):
    """A resolver that answers ``addresses`` for every name, as a rebinding DNS server might."""
    return lambda host, port: [ipaddress.ip_address(a) for a in addresses]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/x", "http://localhost:9000/x", "http://[::1]/x", "http://10.1.2.3/x",
    "http://192.168.0.7/x", "http://172.16.5.5/x", "http://169.254.169.254/latest/meta-data",
    "http://[::ffff:127.0.0.1]/x", "http://0.0.0.0/x", "http://100.64.0.1/x", "http:///x",
    "http://2130706433/x", "http://224.0.0.1/x",  # 127.0.0.1 as one number; multicast
])  # fmt: skip
def test_loopback_link_local_and_private_hosts_are_refused(url):
    with pytest.raises(OutboundRefused, match=r"SPRIG_OUTBOUND_ALLOWED_HOSTS|names no host"):
        OutboundPolicy().check_url(url, "DOWNLOAD_URI")
    with pytest.raises(OutboundRefused, match=r"SPRIG_OUTBOUND_ALLOWED_HOSTS|names no host"):
        OutboundPolicy().target(url, "webhookUrl")


def test_public_hosts_pass_and_the_operator_can_allow_private_ones():
    OutboundPolicy().check_url("https://93.184.216.34/seg.tar.gz", "DOWNLOAD_URI")
    allowed = OutboundPolicy(("10.0.0.0/8", "LOCALHOST", "192.168.1.9"))
    for url in ("http://10.9.9.9/x", "http://localhost:1/x", "http://192.168.1.9/x"):
        allowed.check_url(url, "DOWNLOAD_URI")
    with pytest.raises(OutboundRefused):
        allowed.check_url("http://192.168.1.10/x", "DOWNLOAD_URI")
    OutboundPolicy(allow_private=True).check_url("http://127.0.0.1/x", "DOWNLOAD_URI")


def test_a_name_that_does_not_resolve_or_a_bad_port_is_refused():
    with pytest.raises(OutboundRefused, match="cannot be resolved"):
        OutboundPolicy().check_url("http://no-such-host.invalid/x", "DOWNLOAD_URI")
    with pytest.raises(OutboundRefused, match="bad port"):
        OutboundPolicy().check_url("http://example.com:99999999/x", "DOWNLOAD_URI")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://93.184.215.14/hook", "http or https URL"),
        ("file:///etc/passwd", "http or https URL"),
        ("gopher://93.184.215.14/", "http or https URL"),
        ("http://user:pw@93.184.215.14/", "credentials"),
    ],
)
def test_a_target_is_an_http_url_without_credentials(url, why):
    with pytest.raises(OutboundRefused, match=why):
        OutboundPolicy().target(url, "webhookUrl")


def test_every_address_of_a_name_must_be_public():
    target = OutboundPolicy().target("https://hooks.example/x?a=1", "webhookUrl",
                                     resolver=fixed("93.184.215.14"))  # fmt: skip
    assert (target.address, target.port, target.path) == ("93.184.215.14", 443, "/x?a=1")
    with pytest.raises(OutboundRefused, match=r"169\.254\.169\.254"):
        OutboundPolicy().target("https://hooks.example/x", "webhookUrl",
                                resolver=fixed("93.184.215.14", "169.254.169.254"))  # fmt: skip


class _Recorder:
    """A real HTTP server that records each request and answers ``status`` (with a Location
    to ``location`` when set) and a body."""

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
    loopback = OutboundPolicy(("127.0.0.1",))
    elsewhere, hook = _Recorder(), None
    try:
        hook = _Recorder(302, location=f"http://127.0.0.1:{elsewhere.port}/stolen")
        # the name resolves once, when checked, to the recorder: no second lookup happens
        target = loopback.target(f"http://hooks.example:{hook.port}/alert", "webhookUrl",
                                 resolver=fixed("127.0.0.1"))  # fmt: skip
        assert post_json(target, {"state": "firing"}, timeout_s=5) == 302
        assert hook.seen == [(f"hooks.example:{hook.port}", "/alert", b'{"state":"firing"}')]
        assert elsewhere.seen == []
    finally:
        elsewhere.close()
        if hook is not None:
            hook.close()
