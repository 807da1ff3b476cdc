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
                           lambda i: f"merged_1day_1700000000000_{i}_airlineStats", CUSTOM)  # fmt: skip
    assert [b.name for b in built] == [f"merged_1day_1700000000000_{i}_airlineStats"
                                       for i in range(3)]  # fmt: skip
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
    time_column = config.time_column_name
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
                               lambda i: f"merged_1day_1_{i}_flights", CUSTOM)  # fmt: skip
    got = rows(result.path)
    merged = sorted(zip(got["day"], got["carrier"], got["delay"], got["worst"], strict=True))
    assert merged == [(1, "AA", 14, 7), (2, "DL", 8, 9)]
    with pytest.raises(MergeSpecError, match=r"'carrier\.aggregationType'"):
        spec_for_table(schema, config, aggregations={"carrier": "max"})
    with pytest.raises(MergeSpecError, match="'eraseDimensionValues'"):
        spec_for_table(schema, config, erase=("delay",))
