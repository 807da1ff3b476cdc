"""Outbound requests (issue 28, item 4): a METADATA push's DOWNLOAD_URI, which the servers
fetch, goes only to the deep store, the output roots or allowed hosts; a fetch that fails
shows nothing of what the URL answered."""

from __future__ import annotations

import io
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from spark_jobs.ingestion.push import metadata_tar_bytes
from tests.cluster_e2e.security.conftest import segment_tar

pytestmark = pytest.mark.integration


def _metadata_push(target, tar, name: str, uri: str) -> requests.Response:
    payload = io.BytesIO(metadata_tar_bytes(tar, ("metadata.json", "creation.meta")))
    return target.post(
        "/segments", params={"tableName": "victims", "tableType": "OFFLINE",
                             "uploadType": "METADATA"},
        files={"file": (f"{name}.tar.gz", payload)}, headers={"DOWNLOAD_URI": uri},
    )  # fmt: skip


def _state(target, name: str) -> dict | None:
    view = requests.get(f"{target.ctl}/tables/victims/externalview", timeout=10).json()
    return (view.get("OFFLINE") or {}).get(name)


def _wait_state(target, name: str, state: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if set((_state(target, name) or {}).values()) == {state}:
            return
        time.sleep(0.2)
    raise AssertionError(f"{name} is not {state}: {_state(target, name)}")


def test_private_hosts_and_foreign_files_are_refused_and_the_output_root_works(target, tmp_path):
    target.ensure_table()
    tar = segment_tar(tmp_path, "victims_pushed_0")
    pushed = target.output_root / "victims_pushed_0.tar.gz"
    shutil.copyfile(tar, pushed)
    broker = target.cluster.broker_port
    for uri in (
        f"http://127.0.0.1:{broker}/debug/routingTable/victims", f"http://[::1]:{broker}/",
        "http://169.254.169.254/latest/meta-data/iam/", "http://10.0.0.1/seg.tar.gz",
        "file:///etc/passwd", (target.outside / "precious.txt").as_uri(),
        f"{target.output_root.as_uri()}/../outside/precious.txt", "ftp://example.com/s.tar.gz",
        "webhdfs://127.0.0.1:9870/x", f"zip://metadata.json::{pushed.as_uri()}",
    ):  # fmt: skip
        response = _metadata_push(target, tar, "victims_pushed_0", uri)
        assert response.status_code == 400, (uri, response.text)
    assert _state(target, "victims_pushed_0") is None
    # where the ingestion job and the minions write what they push: the server loads it
    assert _metadata_push(target, tar, "victims_pushed_0", pushed.as_uri()).status_code == 200
    _wait_state(target, "victims_pushed_0", "ONLINE")
    target.assert_healthy()


class _Secretive(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"SECRET-BODY-0451 internal metadata"
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


def test_a_failed_fetch_does_not_echo_the_reply(target, tmp_path):
    """The cluster allows 'localhost' (SPRIG_OUTBOUND_ALLOWED_HOSTS): the push is accepted,
    the server's fetch fails, and its error names the status, never the body."""
    target.ensure_table()
    tar = segment_tar(tmp_path, "victims_echo_0")
    http = ThreadingHTTPServer(("127.0.0.1", 0), _Secretive)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        uri = f"http://localhost:{http.server_address[1]}/victims_echo_0.tar.gz"
        assert _metadata_push(target, tar, "victims_echo_0", uri).status_code == 200
        _wait_state(target, "victims_echo_0", "ERROR")
    finally:
        http.shutdown()
    (server,) = target.cluster.servers
    admin = requests.get(f"{target.ctl}/instances/{server}", timeout=10).json()["adminPort"]
    hosted = requests.get(f"http://127.0.0.1:{admin}/segments", timeout=10).text
    assert "victims_echo_0" in hosted and "HTTP 404" in hosted and "SECRET-BODY" not in hosted
    target.assert_healthy()
