"""ZooKeeper going away: write endpoints answer 503 and change nothing (the DB transaction is
rolled back); when ZooKeeper returns the controller reconnects by itself. Uses its own
short-lived ZooKeeper, not the shared one."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest

from cluster import models
from controller.zk import close_zk, get_zk
from sprig.stack import ZooKeeperService
from tests.cluster.conftest import register_servers, upload

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def own_zookeeper(tmp_path, settings):
    service = ZooKeeperService(tmp_path)
    service.start()
    service.wait_ready()
    yield service
    close_zk()
    service.stop()


def test_writes_answer_503_while_zookeeper_is_down_and_recover(api, own_zookeeper, settings,
                                                               airline_schema, airline_offline_config,
                                                               airline_segments, pinot_examples):  # fmt: skip
    settings.ZK_ADDRESS = own_zookeeper.address
    settings.ZK_REQUEST_TIMEOUT_S = 3.0
    settings.ZK_CONNECT_TIMEOUT_S = 2.0
    register_servers(api, 1)
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    assert api.post("/tables", airline_offline_config, format="json").status_code == 200
    billing = (pinot_examples / "batch" / "billing" / "billing_schema.json").read_bytes()
    schemas_before = list(models.Schema.objects.values_list("name", "config"))
    events_before = models.AuditEvent.objects.count()

    own_zookeeper.stop()
    time.sleep(0.5)
    changed = copy.deepcopy(airline_schema)
    changed["dimensionFieldSpecs"].append({"name": "Extra", "dataType": "STRING"})
    attempts = [
        api.post("/schemas", billing, content_type="application/json"),
        api.put("/schemas/airlineStats", changed, format="json"),
        api.delete("/tables/airlineStats"),
        api.put("/tables/airlineStats/state?state=disable"),
        upload(api, airline_segments[0][1]),
        api.post("/instances", {"host": "h", "port": 1, "type": "SERVER"}, format="json"),
    ]
    for response in attempts:
        assert response.status_code == 503, response.content
        assert "ZooKeeper is unavailable" in response.json()["error"]
    assert list(models.Schema.objects.values_list("name", "config")) == schemas_before
    assert models.TableConfig.objects.filter(table_name="airlineStats").exists()
    assert models.AuditEvent.objects.count() == events_before
    assert not (Path(settings.DEEP_STORE_URI) / "airlineStats").exists()  # upload stored nothing

    own_zookeeper.start()
    own_zookeeper.wait_ready()
    deadline = time.time() + 30
    while time.time() < deadline and not get_zk().connected:
        time.sleep(0.2)
    assert get_zk().connected  # the same client reconnected by itself
    response = api.post("/schemas", billing, content_type="application/json")
    assert response.status_code == 200, response.content
    assert api.get("/tables/airlineStats").status_code == 200
    assert upload(api, airline_segments[0][1]).status_code == 200


def test_first_connection_failure_is_a_clear_503(api, settings, db):
    from sprig.stack.process import free_port

    close_zk()
    settings.ZK_ADDRESS = f"127.0.0.1:{free_port()}"
    settings.ZK_CONNECT_TIMEOUT_S = 1.0
    response = api.post("/schemas", {"schemaName": "x", "dimensionFieldSpecs": []}, format="json")
    assert response.status_code == 503
    assert "cannot connect to ZooKeeper" in response.json()["error"]
    assert not models.Schema.objects.exists()
    close_zk()
