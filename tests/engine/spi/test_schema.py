import math

import pytest

from engine.common.errors import ConfigError
from engine.common.types import DataType, FieldType
from engine.spi import Schema


def test_sections_types_and_defaults():
    schema = Schema.from_json(
        {
            "schemaName": "s",
            "dimensionFieldSpecs": [
                {"name": "tags", "dataType": "STRING", "singleValueField": False},
                {"name": "n", "dataType": "INT", "defaultNullValue": "7"},
                {"name": "f", "dataType": "FLOAT"},
            ],
            "metricFieldSpecs": [{"name": "m", "dataType": "LONG"}],
            "dateTimeFieldSpecs": [
                {
                    "name": "ts",
                    "dataType": "LONG",
                    "format": "1:MILLISECONDS:EPOCH",
                    "granularity": "1:HOURS",
                }
            ],
        }
    )
    assert schema.columns == ["tags", "n", "f", "m", "ts"]
    assert not schema.field("tags").single_value
    assert schema.field("n").default_null_value == 7  # an explicit default wins
    assert schema.field("f").default_null_value == -math.inf
    assert schema.field("m").default_null_value == 0
    assert schema.field("ts").field_type is FieldType.DATE_TIME
    assert schema.field("ts").default_null_value == -(2**63)
    assert schema.time_column_name == "ts"


def test_legacy_time_field_spec():
    schema = Schema.from_json(
        {
            "schemaName": "legacy",
            "dimensionFieldSpecs": [{"name": "d", "dataType": "STRING"}],
            "timeFieldSpec": {
                "incomingGranularitySpec": {
                    "name": "daysSinceEpoch",
                    "dataType": "INT",
                    "timeType": "DAYS",
                }
            },
        }
    )
    spec = schema.field("daysSinceEpoch")
    assert spec.field_type is FieldType.TIME
    assert spec.data_type is DataType.INT
    assert spec.datetime_format.unit == "DAYS"
    assert schema.time_column_name == "daysSinceEpoch"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"dimensionFieldSpecs": []}, "schemaName"),
        (
            {"schemaName": "s", "dimensionFieldSpecs": [{"name": "a", "dataType": "TEXT"}]},
            "dimensionFieldSpecs[0].dataType",
        ),
        (
            {"schemaName": "s", "dimensionFieldSpecs": [{"dataType": "INT"}]},
            "dimensionFieldSpecs[0].name",
        ),
        (
            {
                "schemaName": "s",
                "metricFieldSpecs": [{"name": "m", "dataType": "INT", "singleValueField": False}],
            },
            "metricFieldSpecs[0].singleValueField",
        ),
        (
            {
                "schemaName": "s",
                "dimensionFieldSpecs": [{"name": "a", "dataType": "INT", "defaultNullValue": "x"}],
            },
            "dimensionFieldSpecs[0].defaultNullValue",
        ),
        (
            {
                "schemaName": "s",
                "dateTimeFieldSpecs": [
                    {"name": "t", "dataType": "LONG", "format": "1:FORTNIGHTS:EPOCH"}
                ],
            },
            "dateTimeFieldSpecs[0].format",
        ),
        (
            {
                "schemaName": "s",
                "dimensionFieldSpecs": [
                    {"name": "a", "dataType": "INT"},
                    {"name": "a", "dataType": "INT"},
                ],
            },
            "a",
        ),
        ({"schemaName": "s", "dimensionFieldSpecs": "nope"}, "dimensionFieldSpecs"),
        ({"schemaName": "s", "primaryKeyColumns": ["zz"]}, "primaryKeyColumns[0]"),
    ],
)
def test_invalid_schema_names_the_field(raw, field):
    with pytest.raises(ConfigError) as info:
        Schema.from_json(raw)
    assert info.value.field == field


def test_invalid_json_text():
    with pytest.raises(ConfigError, match="not valid JSON"):
        Schema.from_json("{not json")


def test_unknown_keys_are_kept_and_reported():
    raw = {
        "schemaName": "s",
        "dimensionFieldSpecs": [{"name": "a", "dataType": "STRING"}],
        "complexFieldSpecs": [{"name": "m", "dataType": "MAP"}],
        "enableColumnBasedNullHandling": True,
    }
    schema = Schema.from_json(raw)
    assert schema.ignored_keys == ["complexFieldSpecs"]
    assert schema.to_json() == raw


def test_nullable_columns_follow_pinots_storage_rules():
    """Column-based null handling (schema) stores the nulls of every column not marked
    notNull (Pinot's JSON writes the flag as a string too) and wins over the table's
    nullHandlingEnabled, which otherwise makes every column nullable."""
    fields = [
        {"name": "a", "dataType": "INT", "notNull": "true"},
        {"name": "b", "dataType": "STRING", "notNull": False},
        {"name": "c", "dataType": "LONG"},
    ]
    column_based = Schema.from_json(
        {"schemaName": "s", "enableColumnBasedNullHandling": "true", "dimensionFieldSpecs": fields}
    )
    assert column_based.field("a").not_null
    assert column_based.nullable_columns(False) == {"b", "c"}
    assert column_based.nullable_columns(True) == {"b", "c"}
    table_based = Schema.from_json({"schemaName": "s", "dimensionFieldSpecs": fields})
    assert table_based.nullable_columns(True) == {"a", "b", "c"}
    assert table_based.nullable_columns(False) == set()


@pytest.mark.parametrize(
    "key, spec",
    [
        ("notNull", {"schemaName": "s", "dimensionFieldSpecs": [{"name": "a", "dataType": "INT", "notNull": "yes"}]}),
        ("enableColumnBasedNullHandling", {"schemaName": "s", "enableColumnBasedNullHandling": 1}),
    ],
)  # fmt: skip
def test_a_bad_null_flag_is_refused_with_its_path(key, spec):
    with pytest.raises(ConfigError, match=key):
        Schema.from_json(spec)
