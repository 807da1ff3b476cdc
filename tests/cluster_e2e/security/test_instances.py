"""Instances registered through the REST API (issue 28, item 4): the controller contacts an
address an API caller wrote only as it would any URL from a request, relays nothing of what
an instance answered, and an instance that registered itself cannot be pointed elsewhere."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from tests.cluster_e2e.realtime_helpers import create_topic, kafka_stream_configs
from tests.local_site import Answer, LocalSite

pytestmark = pytest.mark.integration

SECRET = b"SECRET-ADMIN-REPLY-0451"


@pytest.fixture
def lure():
    """Stands for what the attacker wants reached: answers 500 with a secret."""
    with LocalSite(lambda _asked: Answer(500, SECRET)) as site:
        yield site


def _consuming_servers(target, table: str, want: int) -> set[str]:
    deadline = time.monotonic() + 60
    servers: set[str] = set()
    while time.monotonic() < deadline:
        ideal = requests.get(f"{target.ctl}/tables/{table}/idealstate", timeout=10).json()
        servers = {s for replicas in (ideal.get("REALTIME") or {}).values()
                   for s, state in replicas.items() if state == "CONSUMING"}  # fmt: skip
        if len(servers) == want:
            return servers
        time.sleep(0.3)
    raise AssertionError(f"CONSUMING replicas of {table} on {servers}, not {want} servers")


def test_consuming_info_does_not_reach_addresses_an_api_caller_registered(target, kafka, lure):
    """Three servers registered through the API for a tenant of their own, and a REALTIME
    table on it: its consumingSegmentsInfo must not reach the loopback or cloud-metadata
    addresses they name; 'localhost', which this cluster allows, is asked, and its answer's
    body stays out of the controller's reply."""
    port = lure.port
    fakes = {
        "Server_127.0.0.1_18001": {"host": "127.0.0.1", "port": 18001, "adminPort": port},
        "Server_169.254.169.254_80": {"host": "169.254.169.254", "port": 80, "adminPort": 80},
        "Server_localhost_18002": {"host": "localhost", "port": 18002, "adminPort": port},
    }
    for body in fakes.values():
        response = target.post("/instances", json={**body, "type": "SERVER",
                                                   "tags": ["lure_REALTIME"]})  # fmt: skip
        assert response.status_code == 200, response.text
    topic = create_topic(kafka.bootstrap_servers, f"lure_{uuid.uuid4().hex[:8]}", partitions=3)
    schema = {"schemaName": "lure", "dimensionFieldSpecs": [{"name": "u", "dataType": "STRING"}],
              "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG",
                                      "format": "1:MILLISECONDS:EPOCH",
                                      "granularity": "1:MILLISECONDS"}]}  # fmt: skip
    table = {"tableName": "lure", "tableType": "REALTIME", "tenants": {"server": "lure"},
             "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1",
                                "schemaName": "lure"},
             "tableIndexConfig": {"streamConfigs": kafka_stream_configs(
                 kafka.bootstrap_servers, topic, 1000)}, "metadata": {}}  # fmt: skip
    try:
        assert target.post("/schemas", json=schema).status_code == 200
        response = target.post("/tables", json=table)
        assert response.status_code == 200, response.text
        assert _consuming_servers(target, "lure", 3) == set(fakes)

        response = requests.get(f"{target.ctl}/tables/lure/consumingSegmentsInfo", timeout=60)
        assert response.status_code == 200, response.text
        answer = response.json()
        errors = answer["serverErrors"]
        for refused in ("Server_127.0.0.1_18001", "Server_169.254.169.254_80"):
            assert "set through the REST API" in errors[refused], errors
            assert "SPRIG_OUTBOUND_ALLOWED_HOSTS" in errors[refused], errors
        assert errors["Server_localhost_18002"] == "HTTP 500"
        assert answer["serversFailingToRespond"] == 3
        assert lure.paths == ["/tables/lure_REALTIME/consumingSegmentsInfo"]  # localhost's only
        assert SECRET.decode() not in response.text
    finally:
        requests.delete(f"{target.ctl}/tables/lure", params={"type": "realtime"}, timeout=60)
        requests.delete(f"{target.ctl}/schemas/lure", timeout=30)
        for ident in fakes:
            requests.delete(f"{target.ctl}/instances/{ident}", timeout=30)
    target.assert_healthy()


def test_a_running_server_cannot_be_pointed_elsewhere(target, lure):
    """The cluster's own server registered itself: moving its admin port to what the attacker
    wants probed is a 409 through either endpoint, and nothing changes; retagging it still
    works, and it still answers at its own address."""
    port = lure.port
    (server,) = target.cluster.servers
    before = requests.get(f"{target.ctl}/instances/{server}", timeout=10).json()
    body = {"host": before["hostName"], "port": int(before["port"]), "type": "SERVER"}
    for method, path in (("PUT", f"/instances/{server}"), ("POST", "/instances?update=true")):
        response = requests.request(method, f"{target.ctl}{path}", timeout=30,
                                    json={**body, "adminPort": port})  # fmt: skip
        assert response.status_code == 409, response.text
        assert f"adminPort {port}" in response.json()["error"]
    after = requests.get(f"{target.ctl}/instances/{server}", timeout=10).json()
    assert after["adminPort"] == before["adminPort"] and after["tags"] == before["tags"]
    response = requests.put(f"{target.ctl}/instances/{server}", timeout=30,
                            json={**body, "tags": before["tags"]})  # fmt: skip
    assert response.status_code == 200, response.text
    admin = requests.get(f"{target.ctl}/instances/{server}", timeout=10).json()["adminPort"]
    assert admin == before["adminPort"]
    health = requests.get(f"http://127.0.0.1:{admin}/health", timeout=10)
    assert health.text == "OK" and lure.asked == []
    target.assert_healthy()
