from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spark_jobs.ingestion.errors import SpecError
from spark_jobs.ingestion.naming import SegmentNamer

JAN_1_2014_DAYS = 16071  # days since the epoch


@pytest.fixture
def airline(pinot_examples: Path) -> tuple[dict, dict]:
    base = pinot_examples / "batch/airlineStats"
    schema = json.loads((base / "airlineStats_schema.json").read_text())
    config = json.loads((base / "airlineStats_offline_table_config.json").read_text())
    return config, schema


def namer(airline: tuple[dict, dict], kind: str | None, **configs: str) -> SegmentNamer:
    config, schema = airline
    return SegmentNamer.create(kind, configs, config, schema)


def test_simple_is_the_default_and_uses_raw_time_values(airline) -> None:
    simple = namer(airline, None)
    assert simple.uses_time
    # Pinot's jobs name segments after the table name with its type
    assert simple.name(0, JAN_1_2014_DAYS, JAN_1_2014_DAYS + 1) == (
        "airlineStats_OFFLINE_16071_16072_0"
    )


def test_simple_with_prefix_postfix_and_no_sequence(airline) -> None:
    simple = namer(airline, "simple", **{"segment.name.prefix": "p", "segment.name.postfix": "x"})
    assert simple.name(3, 1, 2) == "p_1_2_x_3"
    assert simple.name(-1, 1, 2) == "p_1_2_x"


def test_simple_without_time_column() -> None:
    simple = SegmentNamer.create("simple", {}, {"tableName": "billing_OFFLINE"}, {})
    assert not simple.uses_time
    assert simple.name(4) == "billing_OFFLINE_4"


def test_normalized_date_like_the_spark_example(airline) -> None:
    normalized = namer(
        airline,
        "normalizedDate",
        **{"segment.name.prefix": "airlineStats_batch", "exclude.sequence.id": "true"},
    )
    name = normalized.name(7, JAN_1_2014_DAYS, JAN_1_2014_DAYS + 30)
    assert name == "airlineStats_batch_2014-01-01_2014-01-31"


def test_normalized_date_keeps_the_sequence_id_by_default(airline) -> None:
    assert namer(airline, "normalizedDate").name(2, 16071, 16071) == (
        "airlineStats_OFFLINE_2014-01-01_2014-01-01_2"
    )


def test_normalized_date_hourly_and_simple_date_format() -> None:
    schema = {
        "dateTimeFieldSpecs": [
            {"name": "day", "dataType": "STRING", "format": "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd"},
            {"name": "ms", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH"},
        ]
    }
    daily = {
        "tableName": "t",
        "segmentsConfig": {"timeColumnName": "day", "segmentPushType": "APPEND"},
    }
    assert SegmentNamer.create("normalizedDate", {}, daily, schema).name(
        0, "20140102", "20140105"
    ) == ("t_OFFLINE_2014-01-02_2014-01-05_0")
    hourly = {
        "tableName": "t",
        "segmentsConfig": {"timeColumnName": "ms"},
        "ingestionConfig": {
            "batchIngestionConfig": {
                "segmentIngestionType": "APPEND",
                "segmentIngestionFrequency": "HOURLY",
            }
        },
    }
    hours = SegmentNamer.create("normalizedDate", {}, hourly, schema)
    assert hours.name(-1, 3_600_000 * 5, 3_600_000 * 7) == "t_OFFLINE_1970-01-01-05_1970-01-01-07"


def test_normalized_date_for_refresh_tables_has_no_dates(airline) -> None:
    config, schema = airline
    refresh = {
        **config,
        "segmentsConfig": {**config["segmentsConfig"], "segmentPushType": "REFRESH"},
    }
    normalized = SegmentNamer.create("normalizedDate", {}, refresh, schema)
    assert not normalized.uses_time
    assert normalized.name(0) == "airlineStats_OFFLINE_0"


def test_fixed(airline) -> None:
    assert namer(airline, "fixed", **{"segment.name": "only_one"}).name(5, 1, 2) == "only_one"


def test_input_file(airline) -> None:
    by_file = namer(
        airline,
        "inputFile",
        **{
            "file.path.pattern": r".*/(\d{4})/(\d{2})/\d{2}/([^/]+)\.avro",
            "segment.name.template": r"${filePathPattern:\1}${filePathPattern:\2}_${filePathPattern:\3}",
        },
    )
    uri = "file:///data/rawdata/2014/01/03/airlineStats_data_2014-01-03.avro"
    assert by_file.name(0, None, None, uri) == "201401_airlineStats_data_2014-01-03"
    assert by_file.name(0, None, None, "file:///data/other.csv") == "data_other_csv"


def test_append_uuid(airline) -> None:
    name = namer(airline, "simple", **{"append.uuid.to.segment.name": "true"}).name(0, 1, 1)
    assert re.fullmatch(r"airlineStats_OFFLINE_1_1_0_[0-9a-f-]{36}", name)


def test_bad_naming_specs(airline) -> None:
    with pytest.raises(SpecError, match="'random' is not supported"):
        namer(airline, "random")
    with pytest.raises(SpecError, match=r"needs configs\.segment\.name"):
        namer(airline, "fixed")
    with pytest.raises(SpecError, match=r"needs configs\.file\.path\.pattern"):
        namer(airline, "inputFile", **{"segment.name.template": "x"})
    with pytest.raises(SpecError, match="invalid character '/'"):
        namer(airline, "simple", **{"segment.name.prefix": "a/b"})
    no_time = {"tableName": "t", "segmentsConfig": {"segmentPushType": "APPEND"}}
    with pytest.raises(SpecError, match="timeColumnName"):
        SegmentNamer.create("normalizedDate", {}, no_time, {})


def test_normalized_date_needs_time_values(airline) -> None:
    with pytest.raises(SpecError, match="has no values"):
        namer(airline, "normalizedDate").name(0, None, None)


# engine.spi.table_name: the same raw name as the table config (tests/engine/spi/test_table_name)
def test_segment_names_use_the_table_configs_raw_name():
    namer = SegmentNamer.create(
        "simple", {}, {"tableName": "t_REALTIME", "tableType": "OFFLINE"}, {}
    )
    assert namer.table_name == "t_REALTIME_OFFLINE"
    assert SegmentNamer.create("simple", {}, {"tableName": "billing_OFFLINE"}, {}).table_name == (
        "billing_OFFLINE"
    )
    with pytest.raises(SpecError, match="tableName"):
        SegmentNamer.create("simple", {}, {"tableName": "_OFFLINE"}, {})
