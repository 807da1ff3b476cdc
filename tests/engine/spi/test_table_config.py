import pytest

from engine.common.errors import ConfigError
from engine.spi import Schema, TableConfig

SCHEMA = Schema.from_json(
    {
        "schemaName": "t",
        "dimensionFieldSpecs": [
            {"name": "city", "dataType": "STRING"},
            {"name": "tags", "dataType": "STRING", "singleValueField": False},
            {"name": "label", "dataType": "STRING"},
        ],
        "metricFieldSpecs": [{"name": "amount", "dataType": "DOUBLE"}],
        "dateTimeFieldSpecs": [
            {
                "name": "ts",
                "dataType": "LONG",
                "format": "1:MILLISECONDS:EPOCH",
                "granularity": "1:SECONDS",
            }
        ],
    }
)


def config(**overrides) -> dict:
    raw = {
        "tableName": "t",
        "tableType": "OFFLINE",
        "segmentsConfig": {
            "timeColumnName": "ts",
            "replication": "2",
            "retentionTimeUnit": "DAYS",
            "retentionTimeValue": "30",
        },
        "tableIndexConfig": {"invertedIndexColumns": ["city"], "sortedColumn": ["city"]},
        "tenants": {"broker": "b1", "server": "s1"},
    }
    for key, value in overrides.items():
        section, _, sub = key.partition("__")
        if sub:
            raw.setdefault(section, {})[sub] = value
        else:
            raw[section] = value
    return raw


def test_typed_accessors_and_round_trip():
    raw = config(
        tierConfigs=[
            {
                "name": "cold",
                "segmentSelectorType": "time",
                "segmentAge": "30d",
                "storageType": "pinot_server",
                "serverTag": "cold_OFFLINE",
            }
        ],
        someFutureKey={"x": 1},
        tableIndexConfig__segmentPartitionConfig={
            "columnPartitionMap": {"city": {"functionName": "murmur", "numPartitions": 4}}
        },
        task={"taskTypeConfigsMap": {"MergeRollupTask": {"1d.bucketTimePeriod": "1d"}}},
        ingestionConfig={
            "transformConfigs": [{"columnName": "ts", "transformFunction": "fromEpochDays(day)"}],
            "filterConfig": {"filterFunction": "city = 'x'"},
            "continueOnError": True,
        },
    )
    tc = TableConfig.from_json(raw, SCHEMA)
    assert tc.to_json() == raw
    assert tc.table_name_with_type == "t_OFFLINE"
    assert tc.segments_config.replication == 2
    assert (tc.segments_config.retention_time_unit, tc.segments_config.retention_time_value) == (
        "DAYS",
        30,
    )
    assert tc.sorted_column == "city"
    assert tc.index_config.segment_partition_config["city"].function_name == "Murmur"
    assert tc.tenants.broker == "b1" and tc.tenants.server == "s1"
    assert tc.task_configs == {"MergeRollupTask": {"1d.bucketTimePeriod": "1d"}}
    assert tc.ingestion_config.filter_function == "city = 'x'"
    assert tc.ingestion_config.continue_on_error
    assert tc.ingestion_config.filter_config == {"filterFunction": "city = 'x'"}
    assert tc.push_frequency is None
    assert tc.unrecognized_properties == {"/someFutureKey": raw["someFutureKey"]}
    assert "tierConfigs" in [w["field"] for w in tc.warnings]


def test_field_config_list_merges_into_index_columns():
    raw = config(
        fieldConfigList=[
            {"name": "amount", "encodingType": "RAW"},
            {
                "name": "tags",
                "encodingType": "DICTIONARY",
                "indexes": {"inverted": {}, "bloom": {"enabled": "false"}},
            },
            {"name": "label", "encodingType": "DICTIONARY", "indexTypes": ["RANGE", "TEXT"]},
        ]
    )
    tc = TableConfig.from_json(raw, SCHEMA)
    assert tc.no_dictionary_columns == ["amount"]
    assert tc.inverted_index_columns == ["city", "tags"]
    assert tc.bloom_filter_columns == []
    assert tc.range_index_columns == ["label"]
    assert "fieldConfigList[2].indexes.text" in [w["field"] for w in tc.warnings]


def test_realtime_stream_configs_keep_java_class_names():
    stream = {
        "streamType": "kafka",
        "stream.kafka.topic.name": "t",
        "stream.kafka.decoder.class.name": "org.example.MyDecoder",
    }
    raw = config(
        tableType="REALTIME",
        ingestionConfig={"streamIngestionConfig": {"streamConfigMaps": [stream]}},
    )
    tc = TableConfig.from_json(raw, SCHEMA)
    assert tc.stream_configs == stream
    legacy = config(tableType="REALTIME", tableIndexConfig={"streamConfigs": stream})
    assert TableConfig.from_json(legacy, SCHEMA).stream_configs == stream


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (
            config(tableIndexConfig={"invertedIndexColumns": ["city", "nope"]}),
            "tableIndexConfig.invertedIndexColumns[1]",
        ),
        (config(segmentsConfig={"timeColumnName": "missing"}), "segmentsConfig.timeColumnName"),
        (
            config(
                tableType="REALTIME",
                segmentsConfig={"replication": "1"},
                ingestionConfig={"streamIngestionConfig": {"streamConfigMaps": [{"x": "y"}]}},
            ),
            "segmentsConfig.timeColumnName",
        ),
        (config(segmentsConfig={"timeColumnName": "city"}), "segmentsConfig.timeColumnName"),
        (
            config(segmentsConfig={"timeColumnName": "ts", "replication": "two"}),
            "segmentsConfig.replication",
        ),
        (
            config(tableIndexConfig={"invertedIndexColumns": "city", "rangeIndexColumns": 5}),
            "tableIndexConfig.rangeIndexColumns",
        ),
        (config(tableIndexConfig={"sortedColumn": ["tags"]}), "tableIndexConfig.sortedColumn[0]"),
        (config(tableType="HYBRID"), "tableType"),
        (config(tableName=""), "tableName"),
        (config(tableType="REALTIME"), "ingestionConfig.streamIngestionConfig.streamConfigMaps"),
        (
            config(
                tableIndexConfig={
                    "starTreeIndexConfigs": [
                        {
                            "dimensionsSplitOrder": ["city"],
                            "functionColumnPairs": ["PERCENTILE__amount"],
                        }
                    ]
                }
            ),
            "tableIndexConfig.starTreeIndexConfigs[0].functionColumnPairs[0]",
        ),
        (
            config(
                tableIndexConfig={
                    "starTreeIndexConfigs": [
                        {
                            "dimensionsSplitOrder": ["city", "zip"],
                            "functionColumnPairs": ["COUNT__*"],
                        }
                    ]
                }
            ),
            "tableIndexConfig.starTreeIndexConfigs[0].dimensionsSplitOrder[1]",
        ),
        (
            config(
                tableIndexConfig={
                    "starTreeIndexConfigs": [
                        {"dimensionsSplitOrder": ["city"], "functionColumnPairs": ["SUM__label"]}
                    ]
                }
            ),
            "tableIndexConfig.starTreeIndexConfigs[0].functionColumnPairs[0]",
        ),
        (
            config(
                tableIndexConfig={
                    "segmentPartitionConfig": {
                        "columnPartitionMap": {
                            "city": {"functionName": "Rot13", "numPartitions": 2}
                        }
                    }
                }
            ),
            "tableIndexConfig.segmentPartitionConfig.columnPartitionMap.city.functionName",
        ),
        (
            config(fieldConfigList=[{"name": "ghost", "encodingType": "RAW"}]),
            "fieldConfigList[0].name",
        ),
        (
            config(fieldConfigList=[{"name": "city", "encodingType": "LZ4"}]),
            "fieldConfigList[0].encodingType",
        ),
        (
            config(
                ingestionConfig={
                    "transformConfigs": [
                        {"columnName": "ghost", "transformFunction": "upper(city)"}
                    ]
                }
            ),
            "ingestionConfig.transformConfigs[0].columnName",
        ),
        (
            config(
                tableIndexConfig={"noDictionaryColumns": ["city"], "invertedIndexColumns": ["city"]}
            ),
            "tableIndexConfig.invertedIndexColumns[0]",
        ),
    ],
)
def test_invalid_config_names_the_field(raw, field):
    with pytest.raises(ConfigError) as info:
        TableConfig.from_json(raw, SCHEMA)
    assert info.value.field == field, str(info.value)


def test_push_frequency_prefers_batch_ingestion_config():
    raw = config(
        ingestionConfig={
            "batchIngestionConfig": {
                "segmentIngestionType": "REFRESH",
                "segmentIngestionFrequency": "hourly",
            }
        }
    )
    raw["segmentsConfig"]["segmentPushFrequency"] = "DAILY"
    tc = TableConfig.from_json(raw, SCHEMA)
    assert (tc.push_frequency, tc.push_type) == ("HOURLY", "REFRESH")
    legacy = config()
    legacy["segmentsConfig"] |= {"segmentPushFrequency": "daily", "segmentPushType": "APPEND"}
    assert (
        TableConfig.from_json(legacy, SCHEMA).push_frequency,
        TableConfig.from_json(legacy, SCHEMA).push_type,
    ) == ("DAILY", "APPEND")
