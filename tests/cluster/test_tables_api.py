"""/tables: CRUD with Pinot's shapes, validation errors, tenants' replication check."""

from __future__ import annotations

import copy

import pytest

from cluster import models
from tests.cluster.conftest import register_servers

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def with_schema(api, airline_schema):
    assert api.post("/schemas", airline_schema, format="json").status_code == 200


def test_table_crud_and_hybrid_shape(api, store, with_schema, airline_offline_config,
                                     airline_realtime_config):  # fmt: skip
    register_servers(api, 1)
    response = api.post("/tables", airline_offline_config, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "Table airlineStats_OFFLINE successfully added"
    assert api.post("/tables", airline_realtime_config, format="json").status_code == 200

    assert api.get("/tables").json() == {"tables": ["airlineStats"]}
    assert api.get("/tables?type=realtime").json() == {"tables": ["airlineStats"]}
    both = api.get("/tables/airlineStats").json()
    assert set(both) == {"OFFLINE", "REALTIME"}
    assert both["OFFLINE"]["tableName"] == "airlineStats_OFFLINE"
    assert both["OFFLINE"]["tierConfigs"] == airline_offline_config["tierConfigs"]
    assert set(api.get("/tables/airlineStats?type=OFFLINE").json()) == {"OFFLINE"}

    # published: table config, ideal state, broker resource entry
    assert store.table_config("airlineStats_OFFLINE")["segmentsConfig"]["replication"] == "1"
    assert store.ideal_state("airlineStats_OFFLINE").segments == {}
    assert "airlineStats_REALTIME" in store.ideal_state("brokerResource").segments
    ideal = api.get("/tables/airlineStats/idealstate").json()
    assert ideal == {"OFFLINE": {}, "REALTIME": {}}
    assert api.get("/tables/airlineStats/schema").json()["schemaName"] == "airlineStats"

    updated = copy.deepcopy(airline_offline_config)
    updated["segmentsConfig"]["retentionTimeUnit"] = "DAYS"
    updated["segmentsConfig"]["retentionTimeValue"] = "30"
    response = api.put("/tables/airlineStats", updated, format="json")
    assert response.status_code == 200, response.content
    assert (
        store.table_config("airlineStats_OFFLINE")["segmentsConfig"]["retentionTimeValue"] == "30"
    )

    response = api.delete("/tables/airlineStats?type=realtime")
    assert response.json() == {"status": "Tables: [airlineStats_REALTIME] deleted"}
    assert store.table_config("airlineStats_REALTIME") is None
    assert store.ideal_state("airlineStats_REALTIME") is None
    assert set(api.get("/tables/airlineStats").json()) == {"OFFLINE"}
    assert api.delete("/tables/airlineStats").status_code == 200
    assert api.get("/tables/airlineStats").status_code == 404
    assert api.get("/tables").json() == {"tables": []}


def test_table_without_schema_is_400(api, store, airline_offline_config):
    register_servers(api, 1)
    response = api.post("/tables", airline_offline_config, format="json")
    assert response.status_code == 400
    body = response.json()
    assert "schema 'airlineStats'" in body["error"] and body["field"] == "tableName"
    assert not models.TableConfig.objects.exists()
    assert store.table_config("airlineStats_OFFLINE") is None


def test_invalid_table_config_names_the_field(api, with_schema, airline_offline_config):
    register_servers(api, 1)
    bad = copy.deepcopy(airline_offline_config)
    bad["segmentsConfig"]["retentionTimeUnit"] = "FORTNIGHTS"
    response = api.post("/tables", bad, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "segmentsConfig.retentionTimeUnit"

    bad = copy.deepcopy(airline_offline_config)
    bad["tableIndexConfig"]["invertedIndexColumns"] = ["Carrier", "NoSuchColumn"]
    response = api.post("/tables", bad, format="json")
    assert response.status_code == 400
    assert "NoSuchColumn" in response.json()["error"]
    assert "invertedIndexColumns" in response.json()["error"]

    response = api.post("/tables", {**airline_offline_config, "tableType": "BATCH"}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "tableType"


def test_replication_higher_than_tenant_servers_is_400(api, store, with_schema,
                                                        airline_offline_config):  # fmt: skip
    register_servers(api, 2)
    config = copy.deepcopy(airline_offline_config)
    config["segmentsConfig"]["replication"] = "3"
    response = api.post("/tables", config, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "replication 3" in error and "2 enabled server(s) tagged DefaultTenant_OFFLINE" in error
    assert store.table_config("airlineStats_OFFLINE") is None
    config["segmentsConfig"]["replication"] = "2"
    assert api.post("/tables", config, format="json").status_code == 200


def test_duplicate_table_conflicts_and_validate_stores_nothing(api, with_schema,
                                                               airline_offline_config):  # fmt: skip
    register_servers(api, 1)
    response = api.post("/tables/validate", airline_offline_config, format="json")
    assert response.status_code == 200
    assert response.json()["unrecognizedProperties"] == {}
    assert "tierConfigs" in [w["field"] for w in response.json()["warnings"]]
    assert api.get("/tables").json() == {"tables": []}
    assert api.post("/tables", airline_offline_config, format="json").status_code == 200
    assert api.post("/tables", airline_offline_config, format="json").status_code == 409


def test_schema_in_use_cannot_be_deleted(api, with_schema, airline_offline_config):
    register_servers(api, 1)
    api.post("/tables", airline_offline_config, format="json")
    response = api.delete("/schemas/airlineStats")
    assert response.status_code == 409
    assert "airlineStats_OFFLINE" in response.json()["error"]


def test_table_state_disable_enable(api, store, with_schema, airline_offline_config):
    register_servers(api, 1)
    api.post("/tables", airline_offline_config, format="json")
    assert api.get("/tables/airlineStats/state").json() == {"state": "enabled"}
    assert api.put("/tables/airlineStats/state?state=disable").status_code == 200
    assert store.ideal_state("airlineStats_OFFLINE").enabled is False
    assert api.get("/tables/airlineStats/state?type=OFFLINE").json() == {"state": "disabled"}
    assert api.put("/tables/airlineStats/state?state=enable").status_code == 200
    assert store.ideal_state("airlineStats_OFFLINE").enabled is True
    assert api.put("/tables/airlineStats/state?state=pause").status_code == 400


def test_table_configs_document(api, store, airline_schema, airline_offline_config,
                                airline_realtime_config):  # fmt: skip
    register_servers(api, 1)
    bad = {"tableName": "airlineStats", "schema": airline_schema,
           "offline": {**airline_offline_config, "segmentsConfig": {"replication": "5"}}}  # fmt: skip
    response = api.post("/tableConfigs", bad, format="json")
    assert response.status_code == 400
    assert not models.Schema.objects.exists() and store.schema("airlineStats") is None

    body = {"tableName": "airlineStats", "schema": airline_schema,
            "offline": airline_offline_config, "realtime": airline_realtime_config}  # fmt: skip
    response = api.post("/tableConfigs", body, format="json")
    assert response.status_code == 200, response.content
    assert "offline.tierConfigs" in [w["field"] for w in response.json()["warnings"]]
    assert api.get("/tableConfigs").json() == ["airlineStats"]
    got = api.get("/tableConfigs/airlineStats").json()
    assert got["schema"] == airline_schema
    assert got["offline"]["tableName"] == "airlineStats_OFFLINE"
    assert got["realtime"]["tableType"] == "REALTIME"
    assert api.delete("/tableConfigs/airlineStats").status_code == 200
    assert api.get("/tables").json() == {"tables": []}
    assert store.schema("airlineStats") is None


def test_hybrid_halves_must_share_the_time_column(api, with_schema, airline_offline_config,
                                                  airline_realtime_config):  # fmt: skip
    register_servers(api, 1)
    offline = copy.deepcopy(airline_offline_config)
    del offline["segmentsConfig"]["timeColumnName"]  # fine alone: an OFFLINE snapshot table
    offline.pop("tierConfigs")  # its time-based tiers need no time column, but keep it plain
    assert api.post("/tables", offline, format="json").status_code == 200
    response = api.post("/tables", airline_realtime_config, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "segmentsConfig.timeColumnName"
    assert "hybrid table airlineStats" in response.json()["error"]
    assert set(api.get("/tables/airlineStats").json()) == {"OFFLINE"}


def test_ingestion_functions_pinot_cannot_parse_are_refused(api, with_schema,
                                                            airline_offline_config):  # fmt: skip
    register_servers(api, 1)
    config = copy.deepcopy(airline_offline_config)
    config["ingestionConfig"]["transformConfigs"][0]["transformFunction"] = "toEpochDays("
    response = api.post("/tables/validate", config, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "ingestionConfig.transformConfigs[0].transformFunction"
    # a function Sprig does not have yet is Pinot's to judge: accepted, with a warning
    config["ingestionConfig"]["transformConfigs"][0]["transformFunction"] = "someUdf(ts)"
    response = api.post("/tables/validate", config, format="json")
    assert response.status_code == 200, response.content
    warned = {w["field"]: w["message"] for w in response.json()["warnings"]}
    assert "someUdf" in warned["ingestionConfig.transformConfigs[0].transformFunction"]


def test_quota_must_be_a_size_and_a_positive_rate(api, with_schema, airline_offline_config):
    register_servers(api, 1)
    for quota, field in (({"storage": "lots"}, "quota.storage"),
                         ({"maxQueriesPerSecond": "-1"}, "quota.maxQueriesPerSecond")):  # fmt: skip
        response = api.post("/tables/validate", {**airline_offline_config, "quota": quota},
                            format="json")  # fmt: skip
        assert response.status_code == 400 and response.json()["field"] == field
    ok = {**airline_offline_config, "quota": {"storage": "140G", "maxQueriesPerSecond": "300"}}
    response = api.post("/tables/validate", ok, format="json")
    assert response.status_code == 200
    # enforced by the brokers now (engine.broker.quotas): no "not enforced" warning
    assert "quota.maxQueriesPerSecond" not in [w["field"] for w in response.json()["warnings"]]
