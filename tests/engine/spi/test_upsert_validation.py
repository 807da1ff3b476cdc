"""Pinot's upsert/dedup config rules with Pinot's messages, its defaults and legacy keys, and
the settings an update may not change."""

from __future__ import annotations

import copy

import pytest

from engine.common.errors import ConfigError
from engine.spi import Schema, TableConfig
from engine.spi.upsert_config import (
    ConsistencyMode,
    DedupConfig,
    HashFunction,
    Strategy,
    Toggle,
    UpsertConfig,
    UpsertMode,
)
from engine.spi.upsert_validation import incompatible_changes

SCHEMA = {
    "schemaName": "t",
    "primaryKeyColumns": ["id"],
    "enableColumnBasedNullHandling": True,
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "STRING"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
        {"name": "gone", "dataType": "BOOLEAN"},
        {"name": "late", "dataType": "BOOLEAN"},
    ],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}, {"name": "label", "dataType": "STRING"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip
STREAM = {"streamIngestionConfig": {"streamConfigMaps": [{"streamType": "kafka"}]}}


def table(**sections) -> dict:
    raw = {"tableName": "t", "tableType": "REALTIME", "ingestionConfig": STREAM,
           "segmentsConfig": {"timeColumnName": "ts", "replication": "1"},
           "routing": {"instanceSelectorType": "strictReplicaGroup"}}  # fmt: skip
    raw.update(sections)
    return raw


def message(raw: dict, schema: dict | None = None) -> str:
    with pytest.raises(ConfigError) as err:
        TableConfig.from_json(raw, Schema.from_json(schema or SCHEMA))
    return err.value.message


def test_defaults_and_legacy_keys():
    config = TableConfig.from_json(table(upsertConfig={}), Schema.from_json(SCHEMA))
    upsert = UpsertConfig.of(config)
    assert upsert.mode is UpsertMode.FULL
    assert upsert.comparison_columns_of(config) == ("ts",)
    assert upsert.hash_function is HashFunction.NONE
    assert upsert.default_partial_upsert_strategy is Strategy.OVERWRITE
    assert upsert.consistency_mode is ConsistencyMode.NONE
    assert (upsert.upsert_view_refresh_interval_ms, upsert.new_segment_tracking_time_ms) == (
        3000,
        10000,
    )
    assert upsert.snapshot is Toggle.DEFAULT and not upsert.snapshot.resolve(False)
    legacy = UpsertConfig.from_json({"comparisonColumn": "n", "enableSnapshot": True,
                                     "enablePreload": "true"})  # fmt: skip
    assert legacy.comparison_columns == ("n",)
    assert legacy.snapshot is Toggle.ENABLE and legacy.preload is Toggle.ENABLE
    assert UpsertConfig.of(TableConfig.from_json(table(upsertConfig={"mode": "NONE"}))) is None
    dedup = DedupConfig.of(TableConfig.from_json(table(dedupConfig={})))
    assert (
        dedup.hash_function is HashFunction.NONE
        and dedup.time_column_of(TableConfig.from_json(table())) == "ts"
    )
    assert DedupConfig.of(TableConfig.from_json(table(dedupConfig={"dedupEnabled": False}))) is None


@pytest.mark.parametrize(("raw", "expected"), [
    (table(upsertConfig={}, dedupConfig={}),
     "A table can have either Upsert or Dedup enabled, but not both"),
    (table(upsertConfig={}, routing={}),
     "Upsert/Dedup table must use strict replica-group (i.e. strictReplicaGroup) based routing"),
    (table(dedupConfig={}, routing={"instanceSelectorType": "balanced"}),
     "Upsert/Dedup table must use strict replica-group (i.e. strictReplicaGroup) based routing"),
    (table(upsertConfig={}, tierConfigs=[]), "The upsert table cannot have multi-tiers"),
    (table(upsertConfig={}, tableIndexConfig={"enableDefaultStarTree": True}),
     "The upsert table cannot have star-tree index."),
    (table(upsertConfig={"comparisonColumns": ["nope"]}),
     "The comparison column does not exist on schema"),
    (table(upsertConfig={"dropOutOfOrderRecord": True, "outOfOrderRecordColumn": "late"}),
     "outOfOrderRecordColumn and dropOutOfOrderRecord shouldn't exist together for upsert table"),
    (table(upsertConfig={"outOfOrderRecordColumn": "label"}),
     "The outOfOrderRecordColumn: label must be a single-valued BOOLEAN column"),
    (table(upsertConfig={"deleteRecordColumn": "tags"}),
     "The delete record column: tags must be a single-valued column"),
    (table(upsertConfig={"metadataTTL": 10, "comparisonColumns": ["ts", "n"]}),
     "MetadataTTL / DeletedKeysTTL does not work with multiple comparison columns"),
    (table(upsertConfig={"metadataTTL": 10, "snapshot": "DISABLE"}),
     "Upsert TTL must have snapshot enabled"),
    (table(upsertConfig={"deletedKeysTTL": 10}),
     "Deleted Keys TTL can only be enabled with deleteRecordColumn set."),
    (table(upsertConfig={"mode": "PARTIAL", "partialUpsertStrategies": {"id": "OVERWRITE"}}),
     "Merger cannot be applied to primary key columns"),
    (table(upsertConfig={"mode": "PARTIAL", "partialUpsertStrategies": {"ts": "MAX"}}),
     "Merger cannot be applied to time column"),
    (table(upsertConfig={"mode": "PARTIAL", "partialUpsertStrategies": {"label": "INCREMENT"}}),
     "INCREMENT merger cannot be applied to non-numeric column: label"),
    (table(upsertConfig={"mode": "PARTIAL", "partialUpsertStrategies": {"n": "APPEND"}}),
     "APPEND merger cannot be applied to single-value column: n"),
    (table(upsertConfig={"consistencyMode": "SYNC", "dropOutOfOrderRecord": True}),
     "dropOutOfOrderRecord and outOfOrderRecordColumn can't be used with consistency mode: SYNC"),
    (table(upsertConfig={}, tenants={"tagOverrideConfig": {"realtimeCompleted": "x_REALTIME"}}),
     "Invalid tenant tag override used for Upsert/Dedup table"),
])  # fmt: skip
def test_pinot_messages(raw, expected):
    assert message(raw) == expected


def test_primary_key_rules():
    no_key = copy.deepcopy(SCHEMA)
    no_key["primaryKeyColumns"] = []
    assert message(table(upsertConfig={}), no_key) == (
        "Upsert/Dedup table must have primary key columns in the schema"
    )
    mv_key = copy.deepcopy(SCHEMA)
    mv_key["primaryKeyColumns"] = ["tags"]
    assert message(table(dedupConfig={}), mv_key) == (
        "Upsert/Dedup primary key column: tags cannot be of multi-value type"
    )


def test_partial_upsert_needs_null_handling():
    plain = copy.deepcopy(SCHEMA)
    plain.pop("enableColumnBasedNullHandling")
    assert message(table(upsertConfig={"mode": "PARTIAL"}), plain) == (
        "Null handling must be enabled for partial upsert tables"
    )
    with_table_flag = table(upsertConfig={"mode": "PARTIAL"},
                            tableIndexConfig={"nullHandlingEnabled": True})  # fmt: skip
    TableConfig.from_json(with_table_flag, Schema.from_json(plain))


def test_offline_upsert_rules():
    offline = table(tableType="OFFLINE", upsertConfig={"mode": "PARTIAL"})
    assert message(offline) == "Partial upsert is not supported for OFFLINE table"
    assert (
        message(table(tableType="OFFLINE", dedupConfig={}))
        == "Dedup is not supported for OFFLINE table"
    )


def test_updates_may_not_change_the_metadata_keys():
    old = TableConfig.from_json(table(upsertConfig={"deleteRecordColumn": "gone"}))
    same = TableConfig.from_json(
        table(upsertConfig={"deleteRecordColumn": "gone", "metadataTTL": 0})
    )
    assert incompatible_changes(old, same) == []
    changed = TableConfig.from_json(table(upsertConfig={"hashFunction": "MD5", "mode": "PARTIAL"}))
    assert incompatible_changes(old, changed) == [
        "upsertConfig.mode",
        "upsertConfig.hashFunction",
        "upsertConfig.deleteRecordColumn",
    ]
    assert incompatible_changes(old, TableConfig.from_json(table())) == ["upsertConfig"]
