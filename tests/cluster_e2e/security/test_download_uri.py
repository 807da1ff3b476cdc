"""Outbound requests (issue 28, item 4): a METADATA push's DOWNLOAD_URI, which the servers
fetch, goes only to the deep store, the output roots or allowed hosts; a fetch that fails
shows nothing of what the URL answered."""

from __future__ import annotations

import io
import shutil
import time

import pytest
import requests

from spark_jobs.ingestion.push import metadata_tar_bytes
from sprig.stack.cluster import server_process
from sprig.stack.process import free_port
from tests.cluster_e2e.security.conftest import TABLE, segment_tar
from tests.local_site import Answer, LocalSite

pytestmark = pytest.mark.integration


def _metadata_push(target, tar, name: str, uri: str, table: str = "victims") -> requests.Response:
    payload = io.BytesIO(metadata_tar_bytes(tar, ("metadata.json", "creation.meta")))
    return target.post(
        "/segments", params={"tableName": table, "tableType": "OFFLINE",
                             "uploadType": "METADATA"},
        files={"file": (f"{name}.tar.gz", payload)}, headers={"DOWNLOAD_URI": uri},
    )  # fmt: skip


def _state(target, name: str, table: str = "victims") -> dict | None:
    view = requests.get(f"{target.ctl}/tables/{table}/externalview", timeout=10).json()
    return (view.get("OFFLINE") or {}).get(name)


def _wait_state(target, name: str, state: str, table: str = "victims") -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if set((_state(target, name, table) or {}).values()) == {state}:
            return
        time.sleep(0.2)
    raise AssertionError(f"{name} is not {state}: {_state(target, name, table)}")


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


def _secretive() -> LocalSite:
    return LocalSite(lambda _asked: Answer(404, b"SECRET-BODY-0451 internal metadata"))


def test_a_failed_fetch_does_not_echo_the_reply(target, tmp_path):
    """The cluster allows 'localhost' (SPRIG_OUTBOUND_ALLOWED_HOSTS): the push is accepted,
    the server's fetch fails, and its error names the status, never the body."""
    target.ensure_table()
    tar = segment_tar(tmp_path, "victims_echo_0")
    with _secretive() as http:
        uri = f"http://localhost:{http.port}/victims_echo_0.tar.gz"
        assert _metadata_push(target, tar, "victims_echo_0", uri).status_code == 200
        _wait_state(target, "victims_echo_0", "ERROR")
    (server,) = target.cluster.servers
    admin = requests.get(f"{target.ctl}/instances/{server}", timeout=10).json()["adminPort"]
    hosted = requests.get(f"http://127.0.0.1:{admin}/segments", timeout=10).text
    assert "victims_echo_0" in hosted and "HTTP 404" in hosted and "SECRET-BODY" not in hosted
    target.assert_healthy()


@pytest.fixture
def strict_server(target):
    """A second server, started without SPRIG_OUTBOUND_ALLOWED_HOSTS, alone in tenant
    'strict', and the OFFLINE table 'rebound' on it: to this server 'localhost' is as
    internal as it would be to any server after the name was rebound to 127.0.0.1."""
    env = {k: v for k, v in target.cluster.env.items() if k != "SPRIG_OUTBOUND_ALLOWED_HOSTS"}
    query_port = free_port()
    process = server_process(target.cluster.workdir, query_port, free_port(), env, name="strict")
    ident = f"Server_127.0.0.1_{query_port}"
    process.start()
    try:
        process.wait_ready()
        retag = requests.put(f"{target.ctl}/instances/{ident}/updateTags",
                             params={"tags": "strict_OFFLINE"}, timeout=30)  # fmt: skip
        assert retag.status_code == 200, retag.text
        table = {**TABLE, "tableName": "rebound", "tenants": {"server": "strict"},
                 "segmentsConfig": {"replication": "1", "schemaName": "victims"}}  # fmt: skip
        assert target.post("/tables", json=table).status_code == 200
        yield ident
    finally:
        requests.delete(f"{target.ctl}/tables/rebound", params={"type": "offline"}, timeout=60)
        process.stop()
        requests.delete(f"{target.ctl}/instances/{ident}", timeout=30)


def test_the_server_checks_the_host_again_when_it_fetches(target, tmp_path, strict_server):
    """DNS rebinding: the controller checks a DOWNLOAD_URI's host when it is pushed; the
    server fetches it later, when the name may point elsewhere. The controller accepts
    'localhost' here; the server checks again, refuses before sending anything, and says
    which setting would allow it. The controller's own downloads (a TAR upload, from
    127.0.0.1) still load on it, and the broker queries them there."""
    tar = segment_tar(tmp_path, "rebound_pushed_0")
    with _secretive() as http:
        uri = f"http://localhost:{http.port}/rebound_pushed_0.tar.gz"
        assert _metadata_push(target, tar, "rebound_pushed_0", uri, "rebound").status_code == 200
        _wait_state(target, "rebound_pushed_0", "ERROR", "rebound")
    assert http.asked == []  # nothing reached the address
    admin = requests.get(f"{target.ctl}/instances/{strict_server}", timeout=10).json()["adminPort"]
    hosted = requests.get(f"http://127.0.0.1:{admin}/segments", timeout=10).json()
    (entry,) = hosted["tables"]["rebound_OFFLINE"]
    assert "not downloading" in entry["error"] and "SPRIG_OUTBOUND_ALLOWED_HOSTS" in entry["error"]

    uploaded = segment_tar(tmp_path, "rebound_uploaded_0")
    with uploaded.open("rb") as handle:
        response = target.post("/segments", params={"tableName": "rebound", "tableType": "OFFLINE"},
                               files={"file": (uploaded.name, handle, "application/gzip")})  # fmt: skip
    assert response.status_code == 200, response.text
    _wait_state(target, "rebound_uploaded_0", "ONLINE", "rebound")
    answer = requests.post(f"{target.cluster.broker_url}/query/sql", timeout=30,
                           json={"sql": "SELECT COUNT(*) FROM rebound"}).json()  # fmt: skip
    assert answer["resultTable"]["rows"] == [[3]], answer
    target.assert_healthy()
