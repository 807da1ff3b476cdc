"""/instances and /tenants: registration, tags, enable/disable, drop; tenants retag."""

from __future__ import annotations

import json

import pytest

from engine.clusterstate import InstanceConfig
from engine.runtime import Participant
from tests.cluster.conftest import register_servers

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_instance_lifecycle(api, store, fake_servers):
    (ident,) = register_servers(api, 1)
    assert ident == "Server_127.0.0.1_8001"
    assert api.get("/instances").json() == {"instances": [ident]}
    body = api.get(f"/instances/{ident}").json()
    assert body["instanceName"] == ident and body["port"] == "8001"
    assert body["tags"] == ["DefaultTenant_OFFLINE", "DefaultTenant_REALTIME"]
    assert body["enabled"] is True and body["alive"] is False
    record = store.get_raw(store.paths.instance_config(ident))[0]
    assert b'"TAG_LIST"' in record and b'"HELIX_HOST"' in record

    again = api.post(
        "/instances", {"host": "127.0.0.1", "port": 8001, "type": "SERVER"}, format="json"
    )
    assert again.status_code == 409

    response = api.put(f"/instances/{ident}/updateTags?tags=t1_OFFLINE,t1_REALTIME")
    assert response.status_code == 200
    assert store.instance_config(ident).tags == ["t1_OFFLINE", "t1_REALTIME"]
    assert api.put(f"/instances/{ident}/state?state=disable").status_code == 200
    assert store.instance_config(ident).enabled is False
    assert api.put(f"/instances/{ident}/state?state=enable").status_code == 200

    server = fake_servers(ident)
    assert api.get(f"/instances/{ident}").json()["alive"] is True
    assert api.delete(f"/instances/{ident}").status_code == 409  # live
    server.stop()
    assert api.delete(f"/instances/{ident}").status_code == 200
    assert api.get(f"/instances/{ident}").status_code == 404
    assert api.get("/instances/Server_nowhere_1").status_code == 404


def test_bad_instance_registration_is_400(api, cluster_settings):
    response = api.post("/instances", {"host": "h", "port": 99999, "type": "SERVER"}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "port"
    response = api.post("/instances", {"host": "h", "port": 1, "type": "GATEWAY"}, format="json")
    assert response.status_code == 400 and "type" in response.json()["error"]


def test_tenant_create_retags_untagged_instances(api, store):
    ids = register_servers(api, 3, tags=["server_untagged"])
    api.post("/instances", {"host": "b", "port": 8099, "type": "BROKER", "tags": ["broker_untagged"]},
             format="json")  # fmt: skip
    response = api.post("/tenants", {"tenantRole": "SERVER", "tenantName": "sales",
                                     "numberOfInstances": 2}, format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    assert store.instance_config(ids[0]).tags == ["sales_OFFLINE", "sales_REALTIME"]
    assert store.instance_config(ids[1]).tags == ["sales_OFFLINE", "sales_REALTIME"]
    assert store.instance_config(ids[2]).tags == ["server_untagged"]
    api.post("/tenants", {"tenantRole": "BROKER", "tenantName": "sales", "numberOfInstances": 1},
             format="json")  # fmt: skip
    assert store.instance_config("Broker_b_8099").tags == ["sales_BROKER"]

    tenants = api.get("/tenants").json()
    assert tenants == {"SERVER_TENANTS": ["sales"], "BROKER_TENANTS": ["sales"]}
    detail = api.get("/tenants/sales?type=server").json()
    assert detail == {"tenantName": "sales", "ServerInstances": ids[:2]}

    too_many = api.post("/tenants", {"tenantRole": "SERVER", "tenantName": "ops",
                                     "numberOfInstances": 2}, format="json")  # fmt: skip
    assert too_many.status_code == 400
    assert "only 1 exist" in too_many.json()["error"]
    assert store.instance_config(ids[2]).tags == ["server_untagged"]

    split = api.post("/tenants", {"tenantRole": "SERVER", "tenantName": "ops", "numberOfInstances": 1,
                                  "offlineInstances": 1, "realtimeInstances": 0}, format="json")  # fmt: skip
    assert split.status_code == 200
    assert store.instance_config(ids[2]).tags == ["ops_OFFLINE"]

    assert api.delete("/tenants/sales?type=SERVER").status_code == 200
    assert store.instance_config(ids[0]).tags == ["server_untagged"]
    assert api.get("/tenants").json()["SERVER_TENANTS"] == ["ops"]
    missing = api.post("/tenants", {"tenantRole": "SERVER", "tenantName": "x"}, format="json")
    assert missing.status_code == 400 and missing.json()["field"] == "numberOfInstances"


def test_tenant_update_grows_and_shrinks(api, store):
    ids = register_servers(api, 3, tags=["server_untagged"])
    body = {"tenantRole": "SERVER", "tenantName": "t", "numberOfInstances": 1}
    assert api.post("/tenants", body, format="json").status_code == 200
    assert api.put("/tenants", {**body, "numberOfInstances": 3}, format="json").status_code == 200
    assert all(store.instance_config(i).tags == ["t_OFFLINE", "t_REALTIME"] for i in ids)
    assert api.put("/tenants", {**body, "numberOfInstances": 4}, format="json").status_code == 400
    assert api.put("/tenants", body, format="json").status_code == 200
    assert [store.instance_config(i).tags for i in ids] == [
        ["t_OFFLINE", "t_REALTIME"], ["server_untagged"], ["server_untagged"]]  # fmt: skip
    missing = api.put("/tenants", {**body, "tenantName": "nope"}, format="json")
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "host",
    [
        "a/b",
        "/abs",
        "h\u0000x",
        "tab\there",
        "with space",
        "..",
        "-lead.example",
        "x" * 254,
        "a..b",
        "\u00e9t\u00e9",
        "\ud800",
    ],
)
def test_a_host_that_cannot_be_in_a_zookeeper_path_is_400_naming_host(api, store, host):
    """The host becomes part of the node name Server_<host>_<port>: a bad one is the caller's
    mistake (400 naming the field), not a ZooKeeper outage (503), and nothing is written."""
    before = store.instance_ids()
    for method, path in (("post", "/instances"), ("put", "/instances/Server_h_1")):
        if method == "put":
            api.post("/instances", {"host": "h", "port": 1, "type": "SERVER"}, format="json")
            before = store.instance_ids()
        # JSON text: a lone surrogate goes as its \\u escape, as any JSON client sends it
        body = json.dumps({"host": host, "port": 8001, "type": "SERVER"})
        response = getattr(api, method)(path, body, content_type="application/json")
        assert response.status_code == 400, (method, response.content)
        assert response.json()["field"] == "host"
        assert "host" in response.json()["error"]
        assert store.instance_ids() == before


@pytest.mark.parametrize(
    "host",
    ["localhost", "pinot-server-0.pinot-server-headless.default.svc.cluster.local", "my_server",
     "10.1.2.3", "::1", "fe80::1%eth0", "example.com."],
)  # fmt: skip
def test_host_names_and_ip_addresses_register(api, store, host):
    response = api.post("/instances", {"host": host, "port": 8001, "type": "BROKER"},
                        format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    assert store.instance_config(f"Broker_{host}_8001").host == host


def test_an_instance_that_registered_itself_keeps_its_address(api, store, cluster_settings):
    """A server registers itself (through the real Participant) on loopback: the REST API may
    retag it but not point its ports elsewhere (409, nothing written), so its address stays
    the process's own; an instance added through the API has the caller's address, marked so,
    and may be moved."""
    own = Participant(cluster_settings.ZK_ADDRESS, cluster_settings.CLUSTER_NAME,
                      InstanceConfig("Server_127.0.0.1_8001", "127.0.0.1", 8001, admin_port=8002))  # fmt: skip
    own.start(10)
    try:
        own.ensure_registered()
        ident = own.instance_id
        assert store.instance_config(ident).self_registered
        body = {"host": "127.0.0.1", "port": 8001, "type": "SERVER"}
        for path in ("/instances?update=true", f"/instances/{ident}"):
            method = api.post if path.startswith("/instances?") else api.put
            response = method(path, {**body, "adminPort": 6379}, format="json")
            assert response.status_code == 409, response.content
            assert "adminPort 6379 (it registered 8002)" in response.json()["error"]
        response = api.put(f"/instances/{ident}", {**body, "tags": ["t_OFFLINE"]}, format="json")
        assert response.status_code == 200, response.content
        kept = store.instance_config(ident)
        assert (kept.tags, kept.admin_port, kept.self_registered) == (["t_OFFLINE"], 8002, True)
    finally:
        own.stop()
    api.post("/instances", {**body, "port": 8003, "adminPort": 8004}, format="json")
    added = store.instance_config("Server_127.0.0.1_8003")
    assert not added.self_registered
    moved = api.put("/instances/Server_127.0.0.1_8003", {**body, "port": 8003, "adminPort": 9},
                    format="json")  # fmt: skip
    assert moved.status_code == 200 and store.instance_config(added.instance_id).admin_port == 9
