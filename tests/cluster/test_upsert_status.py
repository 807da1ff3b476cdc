"""The effective upsert/dedup settings the console's table page shows: Pinot's defaults filled
in (comparison and dedup time columns default to the time column)."""

import pytest

from cluster.logic.upsert_status import effective_config
from engine.common.errors import ConfigError


def config(**sections) -> dict:
    streams = {"streamType": "kafka", "stream.kafka.topic.name": "t",
               "stream.kafka.broker.list": "localhost:9092"}  # fmt: skip
    return {"tableName": "t", "tableType": "REALTIME", "segmentsConfig": {"timeColumnName": "ts"},
            "tableIndexConfig": {"streamConfigs": streams}, **sections}  # fmt: skip


def test_partial_upsert_with_its_strategies():
    found = effective_config(config(upsertConfig={
        "mode": "PARTIAL", "partialUpsertStrategies": {"n": "INCREMENT"},
        "comparisonColumn": "version", "consistencyMode": "SNAPSHOT", "enableSnapshot": True,
    }))  # fmt: skip
    assert found["kind"] == "upsert"
    settings = found["config"]
    assert settings["comparisonColumns"] == ["version"]  # Pinot's legacy key read
    assert settings["partialUpsertStrategies"] == {"n": "INCREMENT"}
    assert settings["defaultPartialUpsertStrategy"] == "OVERWRITE"
    assert (settings["consistencyMode"], settings["snapshot"]) == ("SNAPSHOT", "ENABLE")


def test_empty_upsert_config_is_full_on_the_time_column():
    settings = effective_config(config(upsertConfig={}))["config"]
    assert (settings["mode"], settings["comparisonColumns"]) == ("FULL", ["ts"])
    assert "partialUpsertStrategies" not in settings


def test_dedup_and_neither():
    found = effective_config(config(dedupConfig={"metadataTTL": 30}))
    assert found == {"kind": "dedup", "config": {"dedupTimeColumn": "ts", "metadataTTL": 30.0,
                                                 "hashFunction": "NONE", "preload": "DEFAULT"}}  # fmt: skip
    assert effective_config(config(dedupConfig={"dedupEnabled": False})) is None
    assert effective_config(config(upsertConfig={"mode": "NONE"})) is None
    with pytest.raises(ConfigError, match=r"upsertConfig\.mode"):
        effective_config(config(upsertConfig={"mode": "SOMETIMES"}))
