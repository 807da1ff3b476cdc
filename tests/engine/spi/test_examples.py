"""Every schema and table config in the Pinot examples loads unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.spi import Schema, TableConfig


def _schema_for(config_path: Path) -> Path:
    for folder in (config_path.parent, config_path.parent.parent):
        found = sorted(folder.glob("*_schema.json"))
        if found:
            return found[0]
    raise AssertionError(f"no schema next to {config_path}")


def test_every_schema_loads(pinot_examples: Path) -> None:
    paths = sorted(pinot_examples.rglob("*_schema.json"))
    assert len(paths) >= 8
    for path in paths:
        raw = json.loads(path.read_text())
        schema = Schema.from_json(path.read_text())
        assert schema.name == raw["schemaName"]
        assert schema.to_json() == raw
        declared = sum(
            len(raw.get(k, []))
            for k in ("dimensionFieldSpecs", "metricFieldSpecs", "dateTimeFieldSpecs")
        )
        assert len(schema.columns) == declared


# Pinot does not ship this table's schema, so Pinot itself cannot load it either.
_NO_SCHEMA = {"compressionStats_offline_table_config.json"}


def test_every_table_config_loads_and_round_trips(pinot_examples: Path) -> None:
    paths = [
        p for p in sorted(pinot_examples.rglob("*_table_config.json")) if p.name not in _NO_SCHEMA
    ]
    assert len(paths) >= 10
    for path in paths:
        raw = json.loads(path.read_text())
        schema = Schema.from_json(_schema_for(path).read_text())
        config = TableConfig.from_json(path.read_text(), schema=schema)
        assert config.to_json() == raw
        assert config.table_type == raw["tableType"]
        if config.table_type == "REALTIME" and config.stream_configs["streamType"] != "kafka":
            assert any(w["field"].endswith("streamType") for w in config.warnings)
        elif config.table_type == "REALTIME":
            # Java plugin class names are kept as given.
            assert config.stream_configs["stream.kafka.decoder.class.name"].startswith(
                "org.apache.pinot"
            )


def test_airline_offline_config_typed_view(pinot_examples: Path) -> None:
    base = pinot_examples / "batch" / "airlineStats"
    schema = Schema.from_json((base / "airlineStats_schema.json").read_text())
    config = TableConfig.from_json(
        (base / "airlineStats_offline_table_config.json").read_text(), schema
    )
    assert config.table_name_with_type == "airlineStats_OFFLINE"
    assert config.segments_config.time_column_name == "DaysSinceEpoch"
    assert config.segments_config.replication == 1
    trees = config.index_config.star_tree_configs
    assert trees[0].dimensions_split_order == ["AirlineID", "Origin", "Dest"]
    assert trees[0].function_column_pairs == ["COUNT__*", "MAX__ArrDelay"]
    assert trees[0].max_leaf_records == 10
    assert config.inverted_index_columns == ["ArrTimeBlk"]  # from fieldConfigList indexes
    assert [t.column_name for t in config.ingestion_config.transform_configs] == ["ts", "tsRaw"]
    warned = [w["field"] for w in config.warnings]
    assert {"tierConfigs", "tableSamplers", "tableIndexConfig.tierOverwrites"} <= set(warned)
    assert config.unrecognized_properties == {}


def test_minion_task_configs(pinot_examples: Path) -> None:
    path = (
        pinot_examples
        / "minions"
        / "stream"
        / "githubEvents"
        / "githubEvents_offline_table_config.json"
    )
    config = TableConfig.from_json(path.read_text())
    assert config.task_configs["MergeRollupTask"]["1d.bucketTimePeriod"] == "1d"
    assert config.task_configs["MergeRollupTask"]["schedule"] == "0 * * * * ?"


@pytest.mark.parametrize(
    "name",
    ["upsertMeetupRsvp"],
)
def test_partition_config_is_typed(pinot_examples: Path, name: str) -> None:
    path = pinot_examples / "stream" / name / f"{name}_realtime_table_config.json"
    config = TableConfig.from_json(path.read_text())
    part = config.index_config.segment_partition_config["event_id"]
    assert (part.function_name, part.num_partitions) == ("HashCode", 2)
