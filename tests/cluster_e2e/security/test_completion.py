"""The segment completion protocol carries no credentials (issue 28, item 3): an attacker who
plays the committing server can neither write outside the deep store nor have a file from
elsewhere moved into it and served."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
import requests
from confluent_kafka import Producer

from engine.realtime import completion as proto
from tests.cluster_e2e.realtime_helpers import SCHEMA, create_topic, table_config

pytestmark = pytest.mark.integration


def _consuming_segment(target, table: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ideal = requests.get(f"{target.ctl}/tables/{table}/idealstate", timeout=10).json()
        for name, replicas in (ideal.get("REALTIME") or {}).items():
            if "CONSUMING" in replicas.values():
                return name
        time.sleep(0.3)
    raise AssertionError(f"no CONSUMING segment of {table}")


def _call(target, verb: str, method: str = "GET", **params) -> str:
    response = requests.request(method, f"{target.ctl}/{verb}", params=params, timeout=30,
                                files={"f": ("s.tar.gz", b"\x1f\x8bjunk")} if method == "POST"
                                else None)  # fmt: skip
    assert response.status_code == 200, response.text
    return response.json()["status"]


def test_only_the_location_the_upload_handed_out_is_committed(target, kafka):
    topic = create_topic(kafka.bootstrap_servers, f"clicks_{uuid.uuid4().hex[:8]}", partitions=1)
    assert target.post("/schemas", json=SCHEMA).status_code == 200
    config = table_config(kafka.bootstrap_servers, topic)
    config["tableIndexConfig"]["streamConfigs"]["realtime.segment.flush.threshold.rows"] = "5000"
    assert target.post("/tables", json=config).status_code == 200
    name = _consuming_segment(target, "clicks")
    (server,) = target.cluster.servers
    loot = target.outside / "loot.tar.gz"
    loot.write_bytes(b"the controller's own secrets")
    deep_store = target.cluster.workdir / "data" / "deepstore"
    offset = {"streamPartitionMsgOffset": "999999"}

    # the attacker reports for the real server and wins at once (rowLimit)
    assert _call(target, "segmentConsumed", name=name, instance=server, reason="rowLimit",
                 **offset) == proto.COMMIT  # fmt: skip
    assert _call(target, "segmentCommitStart", name=name, instance=server, **offset) == (
        proto.COMMIT_CONTINUE
    )
    # an upload from anyone but the winner, or for a name that walks out: nothing is written
    traversal = "..%2F..%2F..%2Fevil__0__0__20260101T0000Z"
    for instance, segment in (("Server_evil_1", name), (server, requests.utils.unquote(traversal))):
        assert _call(target, "segmentUpload", "POST", name=segment, instance=instance,
                     **offset) == proto.FAILED  # fmt: skip
    # a location the upload never handed out, which starts like the deep store's
    location = f"{deep_store}/clicks/../../../../{loot.relative_to('/')}"
    location = "/" + location.lstrip("/")
    assert _call(target, "segmentCommitEndWithMetadata", "POST", name=name, instance=server,
                 location=location, **offset) == proto.FAILED  # fmt: skip
    assert loot.read_bytes() == b"the controller's own secrets"  # not moved
    stored = [p.name for p in deep_store.rglob("*") if p.is_file()]
    assert not [n for n in stored if "loot" in n or "evil" in n], stored
    download = requests.get(f"{target.ctl}/segments/clicks/{name}", timeout=10)
    assert download.status_code == 404
    assert not (target.cluster.workdir / "evil__0__0__20260101T0000Z").exists()

    # the real server goes on consuming: rows produced now are counted
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(20):
        row = {"user": f"u{i}", "n": 1, "ts": 1_700_000_000_000 + i}
        producer.produce(topic, orjson.dumps(row), partition=0)
    assert producer.flush(10) == 0
    deadline = time.monotonic() + 30
    count = None
    while time.monotonic() < deadline and count != 20:
        answer = requests.post(f"{target.cluster.broker_url}/query/sql", timeout=10,
                               json={"sql": "SELECT COUNT(*) FROM clicks"}).json()  # fmt: skip
        count = (answer.get("resultTable") or {}).get("rows", [[None]])[0][0]
        time.sleep(0.2)
    assert count == 20
    target.assert_healthy()
