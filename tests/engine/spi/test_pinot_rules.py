"""Pinot's TableConfigUtils/SchemaUtils rules: what Pinot refuses is refused naming the field,
what Pinot accepts loads; the indexes map against the older lists resolves as in Pinot."""

from __future__ import annotations

import copy

import pytest

from engine.common.errors import ConfigError
from engine.spi import Schema, TableConfig
from engine.spi.schema_validation import validate_schema

SCHEMA = {
    "schemaName": "t",
    "dimensionFieldSpecs": [
        {"name": "city", "dataType": "STRING"},
        {"name": "url", "dataType": "STRING"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
    ],
    "metricFieldSpecs": [{"name": "amount", "dataType": "DOUBLE"}],
    "dateTimeFieldSpecs": [
        {"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH", "granularity": "1:SECONDS"}
    ],
}  # fmt: skip


def schema(**changes) -> Schema:
    raw = copy.deepcopy(SCHEMA)
    raw.update(changes)
    return Schema.from_json(raw)


def table(**sections) -> dict:
    raw = {"tableName": "t", "tableType": "OFFLINE", "segmentsConfig": {"replication": "1"}}
    raw.update(sections)
    return raw


def refused(raw: dict, sch: Schema | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        TableConfig.from_json(raw, sch or schema())
    return info.value


def fields(config: TableConfig) -> list[str]:
    return [w["field"] for w in config.warnings]


def test_offline_table_without_time_column_loads():
    config = TableConfig.from_json(table(segmentsConfig={"segmentPushType": "APPEND"}), schema())
    assert config.time_column_name is None
    err = refused(table(tableType="REALTIME", ingestionConfig={
        "streamIngestionConfig": {"streamConfigMaps": [{"streamType": "kafka"}]}}))  # fmt: skip
    assert err.field == "segmentsConfig.timeColumnName" and "REALTIME" in err.message


def test_indexes_map_dictionary_wins_over_raw_encoding():
    raw = table(fieldConfigList=[{
        "name": "url", "encodingType": "RAW",
        "indexes": {"dictionary": {}, "inverted": {"enabled": "true"}},
    }])  # fmt: skip
    config = TableConfig.from_json(raw, schema())
    assert config.inverted_index_columns == ["url"]
    assert config.no_dictionary_columns == []
    assert "fieldConfigList[0].encodingType" in fields(config)


def test_raw_encoding_alone_disables_dictionary_and_inverted_needs_one():
    raw = table(fieldConfigList=[{"name": "url", "encodingType": "RAW",
                                  "indexes": {"inverted": {}}}])  # fmt: skip
    err = refused(raw)
    assert err.field == "fieldConfigList[0].indexes.inverted"
    assert "without a dictionary" in err.message
    disabled = table(fieldConfigList=[{"name": "url", "indexes": {
        "dictionary": {"disabled": True}, "inverted": {}}}])  # fmt: skip
    assert refused(disabled).field == "fieldConfigList[0].indexes.inverted"
    legacy = table(tableIndexConfig={"noDictionaryColumns": ["city"],
                                     "invertedIndexColumns": ["city"]})  # fmt: skip
    assert refused(legacy).field == "tableIndexConfig.invertedIndexColumns[0]"


def test_same_index_in_both_forms_is_declared_twice():
    raw = table(
        tableIndexConfig={"invertedIndexColumns": ["city"]},
        fieldConfigList=[{"name": "city", "indexes": {"inverted": {}}}],
    )
    err = refused(raw)
    assert err.field == "fieldConfigList[0].indexes.inverted"
    assert "two different ways" in err.message and "invertedIndexColumns[0]" in err.message
    # different index types on one column translate independently
    ok = table(tableIndexConfig={"invertedIndexColumns": ["city"]},
               fieldConfigList=[{"name": "city", "indexes": {"bloom": {}}}])  # fmt: skip
    config = TableConfig.from_json(ok, schema())
    assert (config.inverted_index_columns, config.bloom_filter_columns) == (["city"], ["city"])


def test_dictionary_field_config_against_no_dictionary_list():
    raw = table(tableIndexConfig={"noDictionaryColumns": ["amount"]},
                fieldConfigList=[{"name": "amount"}])  # fmt: skip
    err = refused(raw)
    assert err.field == "fieldConfigList[0].encodingType"
    assert "encoding type is different" in err.message


def test_field_config_rules():
    assert refused(table(fieldConfigList=[{"name": "nope"}])).field == "fieldConfigList[0].name"
    dup = table(fieldConfigList=[{"name": "city"}, {"name": "city"}])
    assert refused(dup).field == "fieldConfigList[1].name"
    text = table(
        fieldConfigList=[{"name": "amount", "encodingType": "RAW", "indexTypes": ["TEXT"]}]
    )
    assert "TEXT index needs a string column" in refused(text).message


def test_range_index_on_dictionary_string_and_raw_numeric():
    ok = table(tableIndexConfig={"rangeIndexColumns": ["city", "amount"],
                                 "noDictionaryColumns": ["amount"]})  # fmt: skip
    assert TableConfig.from_json(ok, schema()).range_index_columns == ["city", "amount"]
    bad = table(tableIndexConfig={"rangeIndexColumns": ["url"], "noDictionaryColumns": ["url"]})
    assert refused(bad).field == "tableIndexConfig.rangeIndexColumns[0]"


def test_star_tree_rules_and_unbuilt_functions():
    tree = {
        "dimensionsSplitOrder": ["city"],
        "functionColumnPairs": ["COUNT__*", "DISTINCTCOUNTHLL__url"],
    }
    config = TableConfig.from_json(
        table(tableIndexConfig={"starTreeIndexConfigs": [tree]}), schema()
    )
    built = config.index_config.star_tree_configs[0]
    assert built.function_column_pairs == ["COUNT__*"]
    assert built.unbuilt_function_column_pairs == ["DISTINCTCOUNTHLL__url"]
    assert "tableIndexConfig.starTreeIndexConfigs[0]" in fields(config)
    for bad, field in (
        ({**tree, "functionColumnPairs": ["NOSUCH__amount"]}, "functionColumnPairs[0]"),
        ({**tree, "functionColumnPairs": ["SUM__*"]}, "functionColumnPairs[0]"),
        ({**tree, "functionColumnPairs": ["SUM__amount", "sum__amount"]}, "functionColumnPairs[1]"),
        ({**tree, "aggregationConfigs": []}, "functionColumnPairs"),
        ({**tree, "dimensionsSplitOrder": ["tags"]}, "dimensionsSplitOrder[0]"),
    ):
        err = refused(table(tableIndexConfig={"starTreeIndexConfigs": [bad]}))
        assert err.field == f"tableIndexConfig.starTreeIndexConfigs[0].{field}", err


def test_unrecognized_properties_are_json_pointers_with_values():
    raw = table(
        futureKey=1,
        tableIndexConfig={"columnPartitionMap": {"a": 1}},
        fieldConfigList=[{"name": "city", "oddKey": True}],
        tierConfigs=[{"name": "cold", "segmentSelectorType": "fixed",
                      "storageType": "pinot_server", "serverTag": "cold_OFFLINE"}],
    )  # fmt: skip
    config = TableConfig.from_json(raw, schema())
    assert config.unrecognized_properties == {
        "/futureKey": 1,
        "/tableIndexConfig/columnPartitionMap": {"a": 1},
        "/fieldConfigList/0/oddKey": True,
    }
    assert "tierConfigs" in fields(config)
    assert config.to_json() == raw


def test_tier_and_dim_table_rules():
    tier = {"name": "cold", "segmentSelectorType": "time", "segmentAge": "soon",
            "storageType": "pinot_server", "serverTag": "cold_OFFLINE"}  # fmt: skip
    assert refused(table(tierConfigs=[tier])).field == "tierConfigs[0].segmentAge"
    assert refused(table(isDimTable=True)).field == "isDimTable"
    dim = TableConfig.from_json(table(isDimTable=True), schema(primaryKeyColumns=["city"]))
    assert dim.time_column_name is None


def test_upsert_rules_and_no_warning():
    stream = {"streamIngestionConfig": {"streamConfigMaps": [{"streamType": "kafka"}]}}
    base = table(tableType="REALTIME", segmentsConfig={"timeColumnName": "ts"},
                 ingestionConfig=stream, upsertConfig={"mode": "FULL"})  # fmt: skip
    assert refused(base).field == "upsertConfig"  # no primary key
    keyed = schema(primaryKeyColumns=["city"])
    assert refused(base, keyed).field == "routing.instanceSelectorType"
    base["routing"] = {"instanceSelectorType": "strictReplicaGroup"}
    config = TableConfig.from_json(base, keyed)
    assert "upsertConfig" not in fields(config)  # implemented: no "not implemented" warning


def test_transform_destination_may_feed_another_transform():
    chained = table(ingestionConfig={"transformConfigs": [
        {"columnName": "tmp", "transformFunction": "jsonFormat(url)"},
        {"columnName": "city", "transformFunction": "upper(tmp)"},
    ]})  # fmt: skip
    TableConfig.from_json(chained, schema())
    dup = table(ingestionConfig={"transformConfigs": [
        {"columnName": "city", "transformFunction": "upper(url)"},
        {"columnName": "city", "transformFunction": "lower(url)"},
    ]})  # fmt: skip
    assert refused(dup).field == "ingestionConfig.transformConfigs[1].columnName"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dimensionFieldSpecs": [{"name": "my city", "dataType": "STRING"}]},
         "dimensionFieldSpecs[0].name"),
        ({"metricFieldSpecs": [{"name": "m", "dataType": "STRING"}]}, "metricFieldSpecs[0].dataType"),
        ({"metricFieldSpecs": [{"name": "m", "dataType": "DOUBLE", "defaultNullValue": "NaN"}]},
         "metricFieldSpecs[0].defaultNullValue"),
        ({"dateTimeFieldSpecs": [{"name": "d", "dataType": "STRING", "granularity": "1:DAYS",
                                  "format": "1:DAYS:SIMPLE_DATE_FORMAT:MM/dd/yyyy"}]},
         "dateTimeFieldSpecs[0].format"),
    ],
)  # fmt: skip
def test_schema_rules(change, field):
    raw = copy.deepcopy(SCHEMA)
    raw.update(change)
    loaded = Schema.from_json(raw)  # the engine can read it; the controller's rules refuse it
    with pytest.raises(ConfigError) as info:
        validate_schema(loaded)
    assert info.value.field == field


def test_sortable_date_pattern_loads():
    raw = copy.deepcopy(SCHEMA)
    raw["dateTimeFieldSpecs"].append({"name": "d", "dataType": "STRING", "granularity": "1:SECONDS",
                                      "format": "1:SECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd'T'HH:mm:ss"})  # fmt: skip
    validate_schema(Schema.from_json(raw))


def test_retention_units_are_javas_time_units():
    for unit in ("NANOSECONDS", "MICROSECONDS", "days"):
        raw = table(segmentsConfig={"retentionTimeUnit": unit, "retentionTimeValue": "3"})
        assert (
            TableConfig.from_json(raw, schema()).segments_config.retention_time_unit == unit.upper()
        )
    bad = table(segmentsConfig={"retentionTimeUnit": "FORTNIGHTS"})
    assert refused(bad).field == "segmentsConfig.retentionTimeUnit"
