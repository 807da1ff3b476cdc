"""Names from requests and from ZooKeeper never become paths outside their roots (issue 28,
item 3): the slash-named segment, names written to ZooKeeper by hand, deep-store keys and
table names from URLs."""

from __future__ import annotations

import json
import time

import pytest
import requests
from kazoo.client import KazooClient

from tests.cluster_e2e.security.conftest import TABLE, segment_tar

pytestmark = pytest.mark.integration


def _deep_store(target) -> list[str]:
    root = target.cluster.workdir / "data" / "deepstore"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_an_upload_whose_segment_is_named_like_a_path_is_refused(target, tmp_path):
    target.ensure_table()
    before = _deep_store(target)
    for name in (str(target.outside), f"../../../../{target.outside.name}", "..", "a:b"):
        response = target.upload(segment_tar(tmp_path, name))
        assert response.status_code == 400, response.text
        assert "invalid segment name" in response.json()["error"]
    assert _deep_store(target) == before
    target.assert_healthy()


def _segment_states(target) -> dict:
    view = requests.get(f"{target.ctl}/tables/victims/externalview", timeout=10).json()
    return view.get("OFFLINE") or {}


def test_bad_names_written_to_zookeeper_never_touch_a_disk(target, tmp_path):
    """A name that got into ZooKeeper anyway (written by hand, or by an older version):
    the server puts it in ERROR without a path, and the table's DELETE still works."""
    target.ensure_table()
    assert target.upload(segment_tar(tmp_path, "victims_ok_0")).status_code == 200
    server = next(iter(target.cluster.servers))
    bad = [str(target.outside), f"../../../../../../../..{target.outside}", ".."]
    zk = KazooClient(target.zk_address)
    zk.start()
    try:
        path = f"/{target.cluster.env['SPRIG_CLUSTER_NAME']}/IDEALSTATES/victims_OFFLINE"
        record = json.loads(zk.get(path)[0])
        record["mapFields"].update({name: {server: "ONLINE"} for name in bad})
        zk.set(path, json.dumps(record).encode())
    finally:
        zk.stop()
        zk.close()
    expected = {**{name: {server: "ERROR"} for name in bad}, "victims_ok_0": {server: "ONLINE"}}

    def states() -> dict:
        return {name: _segment_states(target).get(name) for name in expected}

    deadline = time.monotonic() + 30
    while states() != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert states() == expected
    target.assert_healthy()
    response = requests.delete(f"{target.ctl}/tables/victims", params={"type": "OFFLINE"},
                               timeout=60)  # fmt: skip
    assert response.status_code == 200, response.text
    target.assert_healthy()


@pytest.mark.parametrize("method, path", [
    ("GET", "/segments/victims/.."), ("GET", "/segments/victims/%2E%2E"),
    ("GET", "/segments/..%2F..%2Fetc/passwd"), ("DELETE", "/segments/victims/.."),
    ("GET", "/segments/victims/..%2F..%2Fcontroller.sqlite3"),
])  # fmt: skip
def test_deep_store_keys_from_urls_stay_inside_the_deep_store(target, method, path):
    response = requests.request(method, f"{target.ctl}{path}", timeout=10)
    assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:200])
    assert b"SQLite" not in response.content[:64]
    target.assert_healthy()


@pytest.mark.parametrize("name", ["../victims2", "a/b", ".", ".hidden", "x.y.z"])
def test_table_and_schema_names_that_are_not_one_folder_are_refused(target, name):
    table = {**TABLE, "tableName": name}
    assert target.post("/tables", json=table).status_code == 400
    schema = {"schemaName": name, "dimensionFieldSpecs": [{"name": "c", "dataType": "STRING"}]}
    assert target.post("/schemas", json=schema).status_code == 400
    target.assert_healthy()
