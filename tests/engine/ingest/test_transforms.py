import pyarrow as pa
import pytest

from engine.common.errors import ConfigError
from engine.ingest.transforms import RecordTransformer
from tests.engine.conftest import make_schema, make_table_config

SCHEMA = make_schema(
    dimensions=[
        {"name": "created_at", "dataType": "STRING"},
        {"name": "city", "dataType": "STRING"},
        {"name": "payload_json", "dataType": "JSON"},
        {"name": "ref", "dataType": "STRING"},
        {"name": "day", "dataType": "INT"},
    ],
    datetimes=[
        {
            "name": "ts",
            "dataType": "TIMESTAMP",
            "format": "1:MILLISECONDS:TIMESTAMP",
            "granularity": "1:SECONDS",
        },
        {
            "name": "created_ms",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:SECONDS",
        },
        {
            "name": "DaysSinceEpoch",
            "dataType": "INT",
            "format": "1:DAYS:EPOCH",
            "granularity": "1:DAYS",
        },
    ],
)


def transformer(transforms, filter_function=None):
    ingestion = {
        "transformConfigs": [{"columnName": c, "transformFunction": f} for c, f in transforms]
    }
    if filter_function:
        ingestion["filterConfig"] = {"filterFunction": filter_function}
    return RecordTransformer(SCHEMA, make_table_config(SCHEMA, ingestionConfig=ingestion))


def test_example_config_functions():
    t = transformer(
        [
            ("ts", "fromEpochDays(DaysSinceEpoch)"),
            ("created_ms", "fromDateTime(created_at, 'yyyy-MM-dd''T''HH:mm:ssZ')"),
            ("day", "toEpochDays(created_ms)"),
            ("payload_json", "jsonFormat(payload)"),
            ("ref", "jsonPathString(payload_json, '$.ref')"),
        ]
    )
    batch = pa.table(
        {
            "DaysSinceEpoch": [16071, 16072],
            "created_at": ["2021-07-21T06:00:00Z", "2021-07-21T23:59:59Z"],
            "payload": [{"ref": "main", "n": 1}, {"ref": "dev", "n": 2}],
        }
    )
    result = t.transform(batch)
    out = result.table
    assert result.keep.all() and result.bad_rows == {}
    assert out.column("ts").to_pylist() == [1388534400000, 1388620800000]
    assert out.column("created_ms").to_pylist() == [1626847200000, 1626911999000]
    assert out.column("day").to_pylist() == [18829, 18829]
    assert out.column("payload_json").to_pylist() == ['{"ref":"main","n":1}', '{"ref":"dev","n":2}']
    assert out.column("ref").to_pylist() == ["main", "dev"]


def test_existing_values_are_not_overwritten():
    out = (
        transformer([("city", "upper(ref)")])
        .transform(pa.table({"city": ["kept", None], "ref": ["a", "b"]}))
        .table
    )
    assert out.column("city").to_pylist() == ["kept", "B"]


def test_filter_drops_rows_where_true():
    t = transformer([], filter_function="city = 'drop' OR day > 10")
    result = t.transform(pa.table({"city": ["a", "drop", "b", None], "day": [1, 2, 11, None]}))
    out = result.table
    assert result.keep.tolist() == [True, False, False, True]
    assert result.num_filtered == 2
    assert out.column("city").to_pylist() == ["a", None]


@pytest.mark.parametrize(
    ("transforms", "filter_function", "field"),
    [
        (
            [("ts", "Groovy({DaysSinceEpoch * 86400000}, DaysSinceEpoch)")],
            None,
            "ingestionConfig.transformConfigs[0].transformFunction",
        ),
        (
            [("ts", "noSuchFunction(day)")],
            None,
            "ingestionConfig.transformConfigs[0].transformFunction",
        ),
        ([("ts", "fromEpochDays(")], None, "ingestionConfig.transformConfigs[0].transformFunction"),
        ([], "Groovy({true})", "ingestionConfig.filterConfig.filterFunction"),
        (
            [("day", "toEpochDays(created_ms)"), ("ref", "toDateTime(ts, 'yyyy-MM-dd Q')")],
            None,
            "ingestionConfig.transformConfigs[1].transformFunction",
        ),
        (
            [("ref", "upper(city, ref)")],
            None,
            "ingestionConfig.transformConfigs[0].transformFunction",
        ),
        (
            [],
            "jsonPathString(payload_json, 'ref') = 'x'",
            "ingestionConfig.filterConfig.filterFunction",
        ),
    ],
)
def test_bad_expressions_name_the_field(transforms, filter_function, field):
    with pytest.raises(ConfigError) as info:
        transformer(transforms, filter_function)
    assert info.value.field == field
    if "Q'" in str(transforms):  # a bad pattern letter is named before any row is read
        assert "unknown pattern letter 'Q'" in info.value.message


def test_rows_whose_transform_fails_are_reported_not_fatal(tmp_path):
    from engine.common.errors import IngestError
    from engine.segment import build_segment

    config = make_table_config(
        SCHEMA,
        ingestionConfig={
            "transformConfigs": [
                {
                    "columnName": "created_ms",
                    "transformFunction": "fromDateTime(created_at, 'yyyy-MM-dd')",
                }
            ],
            "filterConfig": {"filterFunction": "city = 'drop'"},
        },
    )
    data = pa.table(
        {
            "created_at": ["2021-01-02", "garbage", "2021-01-03", "2021-01-04", "also bad"],
            "city": ["a", "b", "drop", "c", "d"],
        }
    )
    with pytest.raises(IngestError) as info:
        build_segment(data, SCHEMA, config, tmp_path / "fail")
    assert info.value.row == 1 and "garbage" in str(info.value)
    result = build_segment(data, SCHEMA, config, tmp_path / "ok", continue_on_error=True)
    assert [e.row for e in result.errors] == [1, 4]
    assert (result.num_rows, result.num_rows_filtered) == (2, 1)


def test_a_transform_failing_everywhere_stops_early():
    from engine.common.errors import IngestError

    t = transformer([("created_ms", "fromDateTime(created_at, 'yyyy-MM-dd')")])
    with pytest.raises(IngestError, match="fails on most rows") as info:
        t.transform(pa.table({"created_at": ["x"] * 5000}))
    assert info.value.row == 0
