"""Every schema and table config that Apache Pinot ships (``all-configs``, same paths as in
Pinot) is accepted by a running controller: each folder's schemas first, then
``POST /tables/validate`` and ``POST /tables``, as a new user would."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.cluster.conftest import register_servers

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# Pinot does not ship this table's schema, so Pinot cannot load it either.
NO_SCHEMA = "compression-stats/compressionStats_offline_table_config.json"


def _folders(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.json")})


def test_every_pinot_example_loads_and_creates(api, store, pinot_examples):
    root = pinot_examples / "all-configs"
    register_servers(api, 4)  # the colocated examples use 2 replica groups of 2 servers
    tables_created, schemas_seen = 0, 0
    for folder in _folders(root):
        schemas = []
        for path in sorted(folder.glob("*_schema.json")):
            response = api.post("/schemas", orjson.loads(path.read_bytes()), format="json")
            assert response.status_code == 200, (path, response.content)
            schemas.append(response.json()["status"].split()[0])
            schemas_seen += 1
        for path in sorted(folder.glob("*_table_config.json")):
            name = str(path.relative_to(root))
            body = orjson.loads(path.read_bytes())
            checked = api.post("/tables/validate", body, format="json")
            if name == NO_SCHEMA:
                assert checked.status_code == 400
                assert "schema 'compressionStats'" in checked.json()["error"]
                continue
            assert checked.status_code == 200, (name, checked.content)
            assert isinstance(checked.json()["warnings"], list)
            added = api.post("/tables", body, format="json")
            assert added.status_code == 200, (name, added.content)
            raw = body["tableName"].removesuffix(f"_{body['tableType']}")
            assert store.table_config(f"{raw}_{body['tableType']}") is not None, name
            tables_created += 1
            # Configs reuse names (the Kafka and Kinesis variants of pullRequestMergedEvents,
            # ssb/customer and tpch/customer): drop each table before the next config.
            assert api.delete(f"/tables/{raw}?type={body['tableType']}").status_code == 200
        for schema in schemas:
            assert api.delete(f"/schemas/{schema}").status_code == 200
    assert (tables_created, schemas_seen) == (50, 49)


def test_github_complex_type_keeps_its_dictionary_and_inverted_index(api, pinot_examples):
    folder = pinot_examples / "all-configs" / "batch" / "githubComplexTypeEvents"
    register_servers(api, 1)
    schema = orjson.loads((folder / "githubComplexTypeEvents_schema.json").read_bytes())
    assert api.post("/schemas", schema, format="json").status_code == 200
    body = orjson.loads((folder / "githubComplexTypeEvents_offline_table_config.json").read_bytes())
    response = api.post("/tables", body, format="json")
    assert response.status_code == 200, response.content
    warned = {w["field"] for w in response.json()["warnings"]}
    assert {"fieldConfigList[0].encodingType", "ingestionConfig.complexTypeConfig"} <= warned


def test_unknown_keys_are_reported_like_pinot(api, pinot_examples):
    folder = pinot_examples / "all-configs" / "stream" / "upsertJsonMeetupRsvp"
    register_servers(api, 1)
    schema = orjson.loads((folder / "upsertJsonMeetupRsvp_schema.json").read_bytes())
    assert api.post("/schemas", schema, format="json").status_code == 200
    body = orjson.loads((folder / "upsertJsonMeetupRsvp_realtime_table_config.json").read_bytes())
    response = api.post("/tables", body, format="json")
    assert response.status_code == 200, response.content
    expected = body["tableIndexConfig"]["columnPartitionMap"]
    assert response.json()["unrecognizedProperties"] == {
        "/tableIndexConfig/columnPartitionMap": expected
    }
    warned = {w["field"] for w in response.json()["warnings"]}
    assert "instanceAssignmentConfigMap.CONSUMING" in warned
    assert "upsertConfig" not in warned  # upsert is implemented
