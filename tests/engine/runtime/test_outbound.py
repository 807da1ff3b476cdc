"""Which hosts a URL from a request may send the cluster to (no network: addresses and
localhost only)."""

from __future__ import annotations

import pytest

from engine.runtime.outbound import OutboundPolicy, OutboundRefused


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/x", "http://localhost:9000/x", "http://[::1]/x", "http://10.1.2.3/x",
    "http://192.168.0.7/x", "http://172.16.5.5/x", "http://169.254.169.254/latest/meta-data",
    "http://[::ffff:127.0.0.1]/x", "http://0.0.0.0/x", "http://100.64.0.1/x", "http:///x",
])  # fmt: skip
def test_loopback_link_local_and_private_hosts_are_refused(url):
    with pytest.raises(OutboundRefused, match=r"SPRIG_OUTBOUND_ALLOWED_HOSTS|names no host"):
        OutboundPolicy().check_url(url, "DOWNLOAD_URI")


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
