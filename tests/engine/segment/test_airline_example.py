"""The airlineStats example: 31 Avro files -> 31 segments whose counts and stats match the
source (read independently with fastavro)."""

from pathlib import Path

import fastavro
import pytest

from engine.ingest.readers import read_records
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig

pytestmark = pytest.mark.slow  # builds 31 segments (a few seconds)


@pytest.fixture(scope="module")
def airline(pinot_examples: Path, tmp_path_factory):
    base = pinot_examples / "batch" / "airlineStats"
    schema = Schema.from_json((base / "airlineStats_schema.json").read_text())
    config = TableConfig.from_json(
        (base / "airlineStats_offline_table_config.json").read_text(), schema
    )
    files = sorted(base.glob("rawdata/**/*.avro"))
    out = tmp_path_factory.mktemp("airline")
    results = [
        build_segment(
            read_records(f, schema=schema), schema, config, out, sequence_id=i, source=str(f)
        )
        for i, f in enumerate(files)
    ]
    return schema, files, results


def _expected(schema, records, column):
    spec = schema.field(column)
    default = spec.default_null_value
    if spec.single_value:
        return [default if r[column] is None else r[column] for r in records]
    return [v for r in records for v in (r[column] or [default])]


def test_airline_segments_match_source(airline):
    schema, files, results = airline
    assert len(files) == 31 and len(results) == 31
    total = 0
    for path, result in zip(files, results, strict=True):
        with open(path, "rb") as fh:
            records = list(fastavro.reader(fh))
        total += len(records)
        segment = load_segment(result.path)
        assert segment.total_docs == result.num_rows == len(records)
        assert result.num_rows_skipped == 0
        days = {r["DaysSinceEpoch"] for r in records}
        assert (segment.metadata.start_time, segment.metadata.end_time) == (min(days), max(days))
        assert segment.name == f"airlineStats_{min(days)}_{max(days)}_{results.index(result)}"
        for column in (
            "AirlineID",
            "ArrDelay",
            "Origin",
            "CancellationCode",
            "TailNum",
            "DivAirports",
            "DivLongestGTimes",
        ):
            values = _expected(schema, records, column)
            meta = segment.column(column).metadata
            assert meta.cardinality == len(set(values)), column
            assert (meta.min_value, meta.max_value) == (min(values), max(values)), column
            assert meta.total_number_of_entries == len(values), column
        # ts comes from the ingestion transform fromEpochDays(DaysSinceEpoch).
        ts = segment.column("ts").values()
        assert set(ts.tolist()) == {d * 86_400_000 for d in days}
    assert total == 9746


def test_airline_star_tree_and_inverted_index(airline):
    _, _, results = airline
    segment = load_segment(results[0].path)
    assert [t.dimensions_split_order for t in segment.star_trees] == [
        ["AirlineID", "Origin", "Dest"],
        ["AirlineID"],
    ]
    tree = segment.star_trees[0]
    assert tree.metric("COUNT__*")[tree.matching_records({})].sum() == segment.total_docs
    arr = segment.column("ArrTimeBlk")
    assert "inverted" in arr.metadata.indexes  # from fieldConfigList indexes.inverted
    ids = arr.dict_ids()
    assert sorted(arr.inverted_index.bitmap(0)) == [i for i, v in enumerate(ids) if v == 0]
