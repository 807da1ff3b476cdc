"""/cluster, /zk and /sql (without a broker) on the real ZooKeeper."""

from __future__ import annotations

import pytest

from engine.query.response import exception_response
from tests.cluster.conftest import register_servers

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_cluster_info_and_configs(api, store, cluster_settings):
    info = api.get("/cluster/info").json()
    assert info == {"clusterName": cluster_settings.CLUSTER_NAME, "leaderController": None}
    assert api.get("/cluster/configs").json()["allowParticipantAutoJoin"] == "true"
    response = api.post("/cluster/configs", {"MergeRollupTask.timeoutMs": "600000"}, format="json")
    assert response.json() == {"status": "Updated cluster config."}
    assert store.cluster_config()["MergeRollupTask.timeoutMs"] == "600000"
    assert api.delete("/cluster/configs/MergeRollupTask.timeoutMs").status_code == 200
    assert "MergeRollupTask.timeoutMs" not in api.get("/cluster/configs").json()
    assert api.delete("/cluster/configs/nope").status_code == 404


def test_zookeeper_browser_api(api, store, cluster_settings):
    (server,) = register_servers(api, 1)
    root = f"/{cluster_settings.CLUSTER_NAME}"
    listing = api.get(f"/zk/ls?path={root}").json()
    assert {"CONFIGS", "IDEALSTATES", "EXTERNALVIEW", "LIVEINSTANCES", "PROPERTYSTORE",
            "INSTANCES", "CONTROLLER"} <= set(listing)  # fmt: skip
    config_path = f"{root}/CONFIGS/PARTICIPANT/{server}"
    record = api.get(f"/zk/get?path={config_path}").json()
    assert record["id"] == server and record["listFields"]["TAG_LIST"]
    stat = api.get(f"/zk/stat?path={config_path}").json()
    assert stat["version"] == 0 and stat["dataLength"] > 0
    lsl = api.get(f"/zk/lsl?path={root}/CONFIGS/PARTICIPANT").json()
    assert set(lsl) == {server} and "mtime" in lsl[server]
    assert api.get(f"/zk/get?path={root}/nope").status_code == 404
    assert api.get("/zk/ls").status_code == 400  # path is required
    # the rest of a shared ZooKeeper stays unseen: "/" lists only this cluster
    assert api.get("/zk/ls?path=/").json() == [cluster_settings.CLUSTER_NAME]
    for outside in ("/zookeeper/config", "/zookeeper", f"{root}x"):
        assert api.get(f"/zk/get?path={outside}").status_code == 403
        assert api.get(f"/zk/lsl?path={outside}").status_code == 403

    assert api.put(f"/zk/put?path={root}/scratch&data=hello").status_code == 200
    assert api.get(f"/zk/get?path={root}/scratch").content == b"hello"
    conflict = api.put(f"/zk/put?path={root}/scratch&data=x&expectedVersion=7")
    assert conflict.status_code == 409
    assert api.put("/zk/put?path=/zookeeper/quota&data=x").status_code == 403
    assert api.put(f"/zk/put?path={root}/absent&data=x&expectedVersion=0").status_code == 404
    assert api.delete(f"/zk/delete?path={root}").status_code == 400
    assert api.delete(f"/zk/delete?path={root}/scratch").status_code == 200
    assert store.stat(f"{root}/scratch") is None


def test_sql_without_a_live_broker_is_a_503_in_pinot_shape(api, store, airline_schema,
                                                           airline_offline_config):  # fmt: skip
    register_servers(api, 1)
    api.post("/schemas", airline_schema, format="json")
    api.post("/tables", airline_offline_config, format="json")
    # a broker that is registered but not live does not count
    api.post("/instances", {"host": "127.0.0.1", "port": 8099, "type": "BROKER"}, format="json")
    response = api.post("/sql", {"sql": "select count(*) from airlineStats"}, format="json")
    assert response.status_code == 503
    body = response.json()
    assert body["exceptions"][0]["errorCode"] == 410
    assert "No live broker tagged DefaultTenant_BROKER" in body["exceptions"][0]["message"]
    # the broker's own error body, key for key: the controller's copy had "resultTable": null,
    # partialResult false and fewer statistics
    assert body == exception_response(410, body["exceptions"][0]["message"])
    assert "resultTable" not in body and body["partialResult"] is True
    assert body["numServersQueried"] == 0 and body["numConsumingSegmentsQueried"] == 0
    assert api.get("/sql?sql=select+1").status_code == 503
    assert api.post("/sql", {}, format="json").status_code == 400


def test_audit_history_and_broker_resource_rebuild(api, store, airline_schema,
                                                   airline_offline_config):  # fmt: skip
    register_servers(api, 1)
    api.post("/schemas", airline_schema, format="json")
    api.post("/tables", airline_offline_config, format="json")
    events = api.get("/audit").json()
    assert [e["action"] for e in events[:2]] == ["table.create", "schema.create"]
    assert api.get("/audit?resourceType=schema").json()[0]["resourceName"] == "airlineStats"
    api.post("/instances", {"host": "b", "port": 1, "type": "BROKER"}, format="json")
    store.update_ideal_state("brokerResource", lambda ideal: ideal.segments.clear() or ideal)
    response = api.post("/tables/airlineStats/rebuildBrokerResourceFromHelixTags")
    assert response.status_code == 200
    brokers = store.ideal_state("brokerResource").segments["airlineStats_OFFLINE"]
    assert brokers == {"Broker_b_1": "ONLINE"}


def test_znode_writes_can_be_turned_off(api, cluster_settings):
    cluster_settings.ZK_WRITES_ENABLED = False
    root = f"/{cluster_settings.CLUSTER_NAME}"
    for response in (api.put(f"/zk/put?path={root}/scratch&data=x"),
                     api.delete(f"/zk/delete?path={root}/scratch")):  # fmt: skip
        assert response.status_code == 403
        assert "SPRIG_ZK_WRITES_ENABLED" in response.json()["error"]
    assert api.get(f"/zk/ls?path={root}").status_code == 200  # reads stay
