"""Where a server downloads a segment from over http(s): a controller's own segment download
as it is, any other host only where the outbound policy allows and at the address it checked,
no redirect followed, no reply echoed (a local HTTP server; no ZooKeeper)."""

from __future__ import annotations

import pytest

from engine.runtime.outbound import OutboundPolicy
from engine.server.download import SegmentSources, controller_download, download_segment
from engine.server.errors import SegmentLoadError
from tests.local_site import Answer, Asked, LocalSite


def _answer(asked: Asked) -> Answer:
    """``/segments/...`` answers a tar's bytes, ``/moved`` redirects to
    ``/segments/elsewhere``, anything else is a 404 with a secret body."""
    if asked.path.startswith("/segments/"):
        return Answer(200, b"TAR-BYTES")
    if asked.path == "/moved":
        return Answer(302, headers={"Location": "/segments/elsewhere"})
    return Answer(404, b"SECRET-METADATA")


@pytest.fixture
def site():
    with LocalSite(_answer) as running:
        yield running


@pytest.mark.parametrize(("url", "expected"), [
    ("http://Ctl.Example:9000/segments/t/s", ("ctl.example", 9000)),
    ("https://ctl/segments/t/s?type=OFFLINE", ("ctl", 443)),
    ("http://ctl/segments/../zk/get", None),  # leaves /segments once resolved
    ("http://ctl/segments%2F..%2Fzk/get", None),
    ("http://ctl/tables/t", None),
    ("file:///segments/t/s", None),
    ("http://ctl:notaport/segments/t", None),
])  # fmt: skip
def test_a_controller_download_is_a_segments_path_on_a_host_and_port(url, expected):
    assert controller_download(url) == expected


def test_a_controller_that_registered_itself_is_downloaded_from_on_loopback(site, tmp_path):
    """Every test cluster runs its controller on 127.0.0.1: its downloads keep working under
    the strictest policy, because the controller registered that address itself."""
    own = SegmentSources(
        OutboundPolicy(), lambda host, port: (host, port) == ("127.0.0.1", site.port)
    )
    url = f"http://127.0.0.1:{site.port}/segments/t/s?type=OFFLINE"
    assert download_segment(url, tmp_path / "s.tar.gz", own).read_bytes() == b"TAR-BYTES"
    assert site.paths == ["/segments/t/s?type=OFFLINE"]


def test_other_hosts_are_checked_at_fetch_time_and_refused_before_any_request(site, tmp_path):
    """What the controller accepted at push time is checked again when the server fetches it
    (a name may resolve elsewhere by then): loopback that no controller registered, a path
    that leaves /segments, link-local, private; nothing is sent and nothing is written."""
    sources = SegmentSources(OutboundPolicy(), lambda host, port: (host, port) == ("127.0.0.1", 1))
    for url in (
        f"http://127.0.0.1:{site.port}/segments/t/s",  # not the registered controller's port
        f"http://127.0.0.1:1/segments/../{site.port}",
        f"http://localhost:{site.port}/segments/t/s",
        "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/seg.tar.gz",
        f"http://user:pw@127.0.0.1:{site.port}/x",
    ):  # fmt: skip
        with pytest.raises(SegmentLoadError, match="not downloading") as refused:
            download_segment(url, tmp_path / "s.tar.gz", sources)
        assert "SPRIG_OUTBOUND" in str(refused.value) or "credentials" in str(refused.value)
    assert site.paths == [] and list(tmp_path.iterdir()) == []


def test_an_allowed_host_is_fetched_without_redirects_or_echo(site, tmp_path):
    allowed = SegmentSources(OutboundPolicy(("localhost",)))
    dest = tmp_path / "s.tar.gz"
    url = f"http://localhost:{site.port}/segments/t/s"
    assert download_segment(url, dest, allowed).read_bytes() == b"TAR-BYTES"
    with pytest.raises(SegmentLoadError, match="HTTP 302"):
        download_segment(f"http://localhost:{site.port}/moved", dest, allowed)
    with pytest.raises(SegmentLoadError, match="HTTP 404") as failed:
        download_segment(f"http://localhost:{site.port}/secret", dest, allowed)
    assert "SECRET" not in str(failed.value)
    assert site.paths == ["/segments/t/s", "/moved", "/secret"]  # the redirect was not followed


def test_fetcher_credentials_go_to_a_registered_controller_only(site, tmp_path):
    """A server's pinot.server.segment.fetcher.auth token goes with a controller's own
    download, never to another host a pushed URL names, even one the policy allows."""
    credentials = {"Authorization": "Basic c3ZjOnB3"}
    controller = SegmentSources(
        OutboundPolicy(), lambda host, port: (host, port) == ("127.0.0.1", site.port)
    )
    download_segment(f"http://127.0.0.1:{site.port}/segments/t/s", tmp_path / "a.tar.gz",
                     controller, headers=credentials)  # fmt: skip
    elsewhere = SegmentSources(OutboundPolicy(("localhost",)))
    download_segment(f"http://localhost:{site.port}/segments/t/s", tmp_path / "b.tar.gz",
                     elsewhere, headers=credentials)  # fmt: skip
    assert [a.authorization for a in site.asked] == ["Basic c3ZjOnB3", None]
