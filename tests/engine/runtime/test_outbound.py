"""Which hosts a URL from a request may send the cluster to, and sending it there: only public
addresses or those an operator allowed, every resolved address checked, the request sent to
the checked one, no redirect followed (no network: addresses, localhost and a local server)."""

from __future__ import annotations

import ipaddress

import pytest
import urllib3

from engine.common.errors import ConfigError
from engine.runtime.outbound import (
    OutboundPolicy,
    OutboundRefused,
    Target,
    post_json,
    reply_error,
    sprig_error,
)
from tests.local_site import Answer, LocalSite


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


def _hook(status: int = 204, location: str | None = None) -> LocalSite:
    """Answers ``status`` (with a Location to ``location`` when set) and a body."""
    headers = {"Location": location} if location else {}
    return LocalSite(lambda _asked: Answer(status, b"secret body\r\n", headers))


def _seen(site: LocalSite) -> list[tuple[str, str, bytes]]:
    return [(a.host, a.path, a.body) for a in site.asked]


def test_the_request_goes_to_the_checked_address_and_redirects_are_not_followed():
    loopback = OutboundPolicy(("127.0.0.1",))
    elsewhere, hook = _hook(), None
    try:
        hook = _hook(302, location=f"http://127.0.0.1:{elsewhere.port}/stolen")
        # the name resolves once, when checked, to the recorder: no second lookup happens
        target = loopback.target(f"http://hooks.example:{hook.port}/alert", "webhookUrl",
                                 resolver=fixed("127.0.0.1"))  # fmt: skip
        assert post_json(target, {"state": "firing"}, timeout_s=5) == 302
        assert _seen(hook) == [(f"hooks.example:{hook.port}", "/alert", b'{"state":"firing"}')]
        assert elsewhere.asked == []
    finally:
        elsewhere.close()
        if hook is not None:
            hook.close()


def test_engine_processes_read_the_policy_from_their_environment():
    policy = OutboundPolicy.from_env({"SPRIG_OUTBOUND_ALLOWED_HOSTS": " alerts.corp, 10.0.0.0/8 ,",
                                      "SPRIG_OUTBOUND_ALLOW_PRIVATE": "False"})  # fmt: skip
    assert policy == OutboundPolicy(("alerts.corp", "10.0.0.0/8"), False)
    assert OutboundPolicy.from_env({}) == OutboundPolicy()
    assert OutboundPolicy.from_env({"SPRIG_OUTBOUND_ALLOW_PRIVATE": "yes"}).allow_private
    with pytest.raises(ConfigError, match="SPRIG_OUTBOUND_ALLOW_PRIVATE"):
        OutboundPolicy.from_env({"SPRIG_OUTBOUND_ALLOW_PRIVATE": "sometimes"})


def test_an_instance_address_is_checked_unless_the_instance_registered_it():
    """A server registered itself on loopback (every test cluster): used as it is. The same
    address written through the REST API is a caller's, refused; a public one keeps the
    address checked."""
    own = OutboundPolicy().instance_target("127.0.0.1", 8097, "/x", self_registered=True,
                                           what="its admin address")  # fmt: skip
    assert (own.host, own.port, own.addresses, own.path) == (
        "127.0.0.1",
        8097,
        ("127.0.0.1",),
        "/x",
    )
    for host in ("127.0.0.1", "169.254.169.254", "::1", "10.0.0.8"):
        with pytest.raises(OutboundRefused, match=r"its admin address names host.*ALLOWED_HOSTS"):
            OutboundPolicy().instance_target(host, 80, "/x", self_registered=False,
                                             what="its admin address")  # fmt: skip
    public = OutboundPolicy().instance_target("93.184.215.14", 8097, "/t", self_registered=False,
                                              what="its admin address")  # fmt: skip
    assert public.addresses == ("93.184.215.14",) and public.host_header == "93.184.215.14:8097"
    allowed = OutboundPolicy(("127.0.0.0/8",)).instance_target(
        "127.0.0.1", 8097, "/x", self_registered=False, what="its admin address"
    )
    assert allowed.address == "127.0.0.1"


def test_the_next_checked_address_is_tried_when_one_cannot_be_connected():
    """A name with two checked addresses (IPv6 and IPv4, say) of which the first does not
    listen: the request reaches the second, as a resolver's answers would be tried; when none
    listens, the connection error is raised."""
    hook = _hook()
    try:
        # the recorder listens on 127.0.0.1 only: 127.0.0.2 refuses the connection
        target = Target("http", "hooks.example", hook.port, ("127.0.0.2", "127.0.0.1"), "/a")
        assert post_json(target, {"n": 1}, timeout_s=5) == 204
        assert _seen(hook) == [(f"hooks.example:{hook.port}", "/a", b'{"n":1}')]
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            post_json(Target("http", "h", hook.port, ("127.0.0.2", "127.0.0.3"), "/"), {},
                      timeout_s=5)  # fmt: skip
        assert len(hook.asked) == 1
    finally:
        hook.close()


@pytest.mark.parametrize(("body", "relayed"), [
    (b'{"errorCode": 710, "message": "Column x not found"}', "HTTP 500: Column x not found"),
    (b'{"code": 500, "error": "no such table"}', "HTTP 500: no such table"),
    (b"<html>internal admin console</html>", "HTTP 500"),
    (b'{"secret": "s3-key"}', "HTTP 500"),
    (b'["a", "list"]', "HTTP 500"),
    (b"", "HTTP 500"),
])  # fmt: skip
def test_of_a_failed_reply_only_the_status_and_a_sprig_error_are_relayed(body, relayed):
    assert reply_error(500, body) == relayed
    assert sprig_error(b'{"errorCode": 710, "message": "m"}') == (710, "m")
