"""/schemas: CRUD, validation with the field named, compatibility and ZooKeeper publishing."""

from __future__ import annotations

import copy
import io

import pytest

from cluster import models

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_schema_crud_is_published_to_zookeeper(api, store, airline_schema):
    response = api.post("/schemas", airline_schema, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "unrecognizedProperties": {},
        "status": "airlineStats successfully added",
    }
    assert api.get("/schemas").json() == ["airlineStats"]
    assert api.get("/schemas/airlineStats").json() == airline_schema
    assert store.schema("airlineStats") == airline_schema
    raw = store.get_raw(store.paths.schema("airlineStats"))[0]
    assert b'"schemaJSON"' in raw and b'"simpleFields"' in raw

    evolved = copy.deepcopy(airline_schema)
    evolved["dimensionFieldSpecs"].append({"name": "NewColumn", "dataType": "STRING"})
    response = api.put("/schemas/airlineStats", evolved, format="json")
    assert response.status_code == 200, response.content
    assert store.schema("airlineStats")["dimensionFieldSpecs"][-1]["name"] == "NewColumn"

    response = api.delete("/schemas/airlineStats")
    assert response.status_code == 200
    assert store.schema("airlineStats") is None
    assert api.get("/schemas/airlineStats").status_code == 404
    actions = list(models.AuditEvent.objects.values_list("action", flat=True))
    assert actions == ["schema.create", "schema.update", "schema.delete"]


def test_invalid_schema_gets_400_naming_the_field(api, store, airline_schema):
    bad = copy.deepcopy(airline_schema)
    bad["dimensionFieldSpecs"][3]["dataType"] = "INTEGER"
    response = api.post("/schemas", bad, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 400
    assert "dimensionFieldSpecs[3].dataType" in body["error"]
    assert body["field"] == "dimensionFieldSpecs[3].dataType"
    assert not models.Schema.objects.exists()
    assert store.schema("airlineStats") is None

    response = api.post("/schemas", {"dimensionFieldSpecs": []}, format="json")
    assert response.status_code == 400
    assert "schemaName" in response.json()["error"]


def test_invalid_json_body_is_a_400(api, cluster_settings):
    response = api.generic("POST", "/schemas", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["error"]


def test_incompatible_schema_change_needs_force(api, store, airline_schema):
    api.post("/schemas", airline_schema, format="json")
    changed = copy.deepcopy(airline_schema)
    changed["dimensionFieldSpecs"] = changed["dimensionFieldSpecs"][1:]
    removed = airline_schema["dimensionFieldSpecs"][0]["name"]
    response = api.put("/schemas/airlineStats", changed, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith(
        "Backward incompatible schema airlineStats. Reason: New schema: airlineStats is not "
        "backward-compatible with the existing schema.\nIncompatibility Details:\n"
    )
    assert f"- Missing columns (present in old schema but not in new): [{removed}]" in error
    assert len(store.schema("airlineStats")["dimensionFieldSpecs"]) == len(
        airline_schema["dimensionFieldSpecs"]
    )
    response = api.put("/schemas/airlineStats?force=true", changed, format="json")
    assert response.status_code == 200


def test_type_and_primary_key_changes_are_refused_and_additions_pass(api, store):
    old = {
        "schemaName": "pk",
        "dimensionFieldSpecs": [{"name": "id", "dataType": "INT"},
                                {"name": "tags", "dataType": "STRING", "singleValueField": False}],
        "metricFieldSpecs": [{"name": "m", "dataType": "INT"}],
        "primaryKeyColumns": ["id"],
    }  # fmt: skip
    assert api.post("/schemas", old, format="json").status_code == 200
    changed = copy.deepcopy(old)
    changed["dimensionFieldSpecs"][0]["dataType"] = "LONG"
    changed["dimensionFieldSpecs"][1]["singleValueField"] = True
    changed["primaryKeyColumns"] = ["id", "m"]
    error = api.put("/schemas/pk", changed, format="json").json()["error"]
    assert "- Primary key columns changed ([id] -> [id, m])" in error
    assert (
        "- Incompatible field specifications: [id (old: DIMENSION INT, new: DIMENSION LONG), "
        "tags (old: DIMENSION STRING MULTI_VALUE, new: DIMENSION STRING)]"
    ) in error
    assert "Suggestions to fix:" in error
    added = copy.deepcopy(old)
    added["dimensionFieldSpecs"].append({"name": "extra", "dataType": "STRING"})
    added["metricFieldSpecs"][0] = {"name": "m", "dataType": "INT", "defaultNullValue": 7}
    response = api.put("/schemas/pk", added, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "pk successfully added"


def test_schema_validate_does_not_store(api, store, airline_schema):
    response = api.post("/schemas/validate", airline_schema, format="json")
    assert response.status_code == 200
    assert response.json()["schemaName"] == "airlineStats"
    assert api.get("/schemas").json() == []


def test_add_without_override_conflicts(api, airline_schema):
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    response = api.post("/schemas?override=false", airline_schema, format="json")
    assert response.status_code == 409


def test_schema_as_multipart_file(api, store, airline_dir):
    # curl -F schemaName=@airlineStats_schema.json localhost:9000/schemas
    with (airline_dir / "airlineStats_schema.json").open("rb") as handle:
        response = api.post("/schemas", {"schemaName": handle}, format="multipart")
    assert response.status_code == 200, response.content
    assert store.schema("airlineStats")["schemaName"] == "airlineStats"
    broken = io.BytesIO(b"{broken")
    broken.name = "broken.json"
    response = api.post("/schemas", {"schemaName": broken}, format="multipart")
    assert (
        response.status_code == 400 and "broken.json is not valid JSON" in response.json()["error"]
    )


def test_unknown_schema_keys_are_kept_and_reported(api, airline_schema):
    schema = copy.deepcopy(airline_schema)
    schema["futureKey"] = {"a": 1}
    schema["dimensionFieldSpecs"][0]["oddKey"] = True
    expected = {"/futureKey": {"a": 1}, "/dimensionFieldSpecs/0/oddKey": True}
    response = api.post("/schemas/validate", schema, format="json")
    assert response.status_code == 200
    assert response.json()["unrecognizedProperties"] == expected
    response = api.post("/schemas", schema, format="json")
    assert response.json()["unrecognizedProperties"] == expected
    assert api.get("/schemas/airlineStats").json()["futureKey"] == {"a": 1}


def test_pinot_schema_rules_name_the_field(api, airline_schema):
    schema = copy.deepcopy(airline_schema)
    schema["metricFieldSpecs"] = [{"name": "label", "dataType": "STRING"}]
    response = api.post("/schemas", schema, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "metricFieldSpecs[0].dataType"
