"""MergeRollupTask's segment path on Spark: real airlineStats segments read back through the
engine, merged, and written as new segments through the engine's writer. A concat keeps every
row of every column; a rollup of a table with metrics keeps SUM per group; the merged segments
carry Pinot's merge metadata and names."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from engine.segment import build_segment, load_segment, unpack_segment
from engine.spi import Schema, TableConfig
from spark_jobs.minion.merge_rollup import MergeSpecError, merge_segments, spec_for_table
from tests.cluster.conftest import (  # noqa: F401 - fixtures
    airline_dir,
    airline_offline_config,
    airline_schema,
    airline_segments,
)

pytestmark = pytest.mark.integration
CUSTOM = {"MergeRollupTask.mergeLevel": "1day", "MergeRollupTask.time": "1700000000000"}


def rows(directory: Path) -> dict[str, list]:
    segment = load_segment(directory)
    try:
        return segment.to_arrow().to_pydict()
    finally:
        segment.close()


def test_concat_of_airline_segments_keeps_every_row(spark, tmp_path, airline_segments,  # noqa: F811
                                                    airline_schema, airline_offline_config):  # noqa: F811  # fmt: skip
    schema = Schema.from_json(airline_schema)
    config = TableConfig.from_json(airline_offline_config, schema=schema)
    inputs = [unpack_segment(tar, tmp_path / "in" / name) for name, tar in airline_segments]
    spec = spec_for_table(schema, config, merge_type="concat", max_records_per_segment=50)
    built = merge_segments(spark, inputs, schema, config, spec, tmp_path / "out",
                           "merged_1day_1700000000000_0_airlineStats", CUSTOM)  # fmt: skip
    time_column = config.time_column_name
    days = [rows(b.path)[time_column] for b in built]
    # Pinot's <prefix>_<minTime>_<maxTime>_<sequence>
    assert [b.name for b in built] == [
        f"merged_1day_1700000000000_0_airlineStats_{min(d)}_{max(d)}_{i}"
        for i, d in enumerate(days)]  # fmt: skip
    assert [b.num_rows for b in built] == [50, 50, 20]
    assert all(b.metadata.custom == CUSTOM for b in built)
    before, after = defaultdict(list), defaultdict(list)
    for directory in inputs:
        for column, values in rows(directory).items():
            before[column] += values
    for result in built:
        for column, values in rows(result.path).items():
            after[column] += values
    assert set(after) == set(before)
    for column in before:
        assert sorted(after[column], key=repr) == sorted(before[column], key=repr), column
    # the time column keeps each output segment to a contiguous range
    assert max(rows(built[0].path)[time_column]) <= min(rows(built[1].path)[time_column])


def test_rollup_keeps_sum_per_group(spark, tmp_path):
    schema = Schema.from_json({
        "schemaName": "flights",
        "dimensionFieldSpecs": [{"name": "carrier", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "delay", "dataType": "LONG"},
                             {"name": "worst", "dataType": "INT"}],
        "dateTimeFieldSpecs": [{"name": "day", "dataType": "INT", "format": "1:DAYS:EPOCH",
                                "granularity": "1:DAYS"}],
    })  # fmt: skip
    config = TableConfig.from_json({"tableName": "flights", "tableType": "OFFLINE",
                                    "segmentsConfig": {"timeColumnName": "day"}}, schema=schema)  # fmt: skip
    data = [
        {"carrier": ["AA", "AA", "DL"], "delay": [5, 7, 1], "worst": [5, 7, 1], "day": [1, 1, 2]},
        {"carrier": ["AA", "DL", "DL"], "delay": [2, 3, 4], "worst": [2, 9, 4], "day": [1, 2, 2]},
    ]  # fmt: skip
    inputs = [build_segment(pa.table(d), schema, config, tmp_path / "in", segment_name=f"s{i}").path
              for i, d in enumerate(data)]  # fmt: skip
    spec = spec_for_table(schema, config, merge_type="rollup", aggregations={"worst": "max"})
    (result,) = merge_segments(spark, inputs, schema, config, spec, tmp_path / "out",
                               "merged_1day_1_0_flights", CUSTOM)  # fmt: skip
    assert result.name == "merged_1day_1_0_flights_1_2_0"
    got = rows(result.path)
    merged = sorted(zip(got["day"], got["carrier"], got["delay"], got["worst"], strict=True))
    assert merged == [(1, "AA", 14, 7), (2, "DL", 8, 9)]
    with pytest.raises(MergeSpecError, match=r"'carrier\.aggregationType'"):
        spec_for_table(schema, config, aggregations={"carrier": "max"})
    with pytest.raises(MergeSpecError, match="'eraseDimensionValues'"):
        spec_for_table(schema, config, erase=("delay",))


def test_outputs_split_by_time_bucket_and_partition(spark, tmp_path):
    """A segment spanning two buckets is cut at the bucket end, and a partitioned table's
    rows of different partitions never share an output segment (Pinot's time and table
    partitioners), each output still at most maxNumRecordsPerSegment rows."""
    schema = Schema.from_json({
        "schemaName": "flights",
        "dimensionFieldSpecs": [{"name": "carrier", "dataType": "INT"}],
        "metricFieldSpecs": [{"name": "delay", "dataType": "LONG"}],
        "dateTimeFieldSpecs": [{"name": "day", "dataType": "INT", "format": "1:DAYS:EPOCH",
                                "granularity": "1:DAYS"}],
    })  # fmt: skip
    config = TableConfig.from_json({
        "tableName": "flights", "tableType": "OFFLINE",
        "segmentsConfig": {"timeColumnName": "day"},
        "tableIndexConfig": {"segmentPartitionConfig": {"columnPartitionMap": {
            "carrier": {"functionName": "Modulo", "numPartitions": 2}}}},
    }, schema=schema)  # fmt: skip
    data = {"carrier": [1, 2, 3, 4, 5, 1, 2], "delay": [1, 2, 3, 4, 5, 6, 7],
            "day": [10, 10, 10, 10, 10, 11, 11]}  # fmt: skip
    (source,) = [build_segment(pa.table(data), schema, config, tmp_path / "in",
                               segment_name="s").path]  # fmt: skip
    spec = spec_for_table(schema, config, merge_type="concat", max_records_per_segment=2)
    built = merge_segments(spark, [source], schema, config, spec, tmp_path / "out", "m", CUSTOM,
                           bucket_ms=86_400_000)  # fmt: skip
    got = [(b.name, sorted(zip(rows(b.path)["carrier"], rows(b.path)["delay"], strict=True)))
           for b in built]  # fmt: skip
    # day 10: partition 0 (2, 4), partition 1 (1, 3, 5) in runs of 2; day 11: 1 and 2
    assert [(name.rsplit("_", 1)[1], name.split("_")[1:3]) for name, _ in got] == [
        (str(i), days) for i, days in enumerate(
            [["10", "10"]] * 3 + [["11", "11"]] * 2)]  # fmt: skip
    assert sorted(r for _, rs in got for r in rs) == sorted(
        zip(data["carrier"], data["delay"], strict=True)
    )
    for _, rs in got:
        assert len(rs) <= 2
        assert len({carrier % 2 for carrier, _ in rs}) == 1
    assert sorted(len(rs) for _, rs in got[:3]) == [1, 2, 2]
