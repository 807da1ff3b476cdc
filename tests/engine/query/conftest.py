"""Fixtures for the query tests: airline segments built from Pinot's own example data, and
small synthetic segments with every index kind."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from engine.segment import build_segment, load_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from tests.engine.query import conformance


@pytest.fixture(scope="session")
def airline_segments(pinot_examples: Path, tmp_path_factory: pytest.TempPathFactory):
    """One segment per Avro file (31), built with the example's schema and table config."""
    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    out = tmp_path_factory.mktemp("airline-segments")
    segments = []
    for i, path in enumerate(conformance.airline_avro_files(pinot_examples)):
        rows = pa.Table.from_pylist(conformance.read_avro(path))
        built = build_segment(rows, schema, config, out, sequence_id=i)
        segments.append(load_segment(built.path))
    return schema, segments


SYNTH_SCHEMA = {
    "schemaName": "synth",
    "dimensionFieldSpecs": [
        {"name": "country", "dataType": "STRING"},
        {"name": "site", "dataType": "INT"},
        {"name": "user", "dataType": "LONG"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
        {"name": "codes", "dataType": "INT", "singleValueField": False},
    ],
    "metricFieldSpecs": [
        {"name": "clicks", "dataType": "INT"},
        {"name": "latency", "dataType": "LONG"},
        {"name": "score", "dataType": "DOUBLE"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}

SYNTH_TABLE = {
    "tableName": "synth",
    "tableType": "OFFLINE",
    "segmentsConfig": {"timeColumnName": "ts", "replication": "1"},
    "tableIndexConfig": {
        "sortedColumn": ["country"],
        "invertedIndexColumns": ["site", "tags"],
        "rangeIndexColumns": ["clicks", "latency"],
        "bloomFilterColumns": ["user"],
        "noDictionaryColumns": ["latency", "score"],
        "segmentPartitionConfig": {
            "columnPartitionMap": {"site": {"functionName": "Modulo", "numPartitions": 4}}
        },
        "starTreeIndexConfigs": [
            {
                "dimensionsSplitOrder": ["country", "site"],
                "functionColumnPairs": [
                    "COUNT__*",
                    "SUM__clicks",
                    "MAX__latency",
                    "AVG__clicks",
                    "MIN__score",
                ],
                "maxLeafRecords": 5,
            }
        ],
    },
}
COUNTRIES = ["US", "IN", "BR", "DE", "GB", "FR"]
TAGS = ["a", "b", "c", "d", "e"]


def synth_rows(n: int, seed: int) -> dict:
    """Columns as Python lists (MV columns as lists of lists)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return {
        "country": [COUNTRIES[i] for i in rng.integers(0, len(COUNTRIES), n)],
        "site": rng.integers(0, 50, n).tolist(),
        "user": (rng.integers(0, 500, n) + 1_000_000).tolist(),
        "tags": [
            [TAGS[j] for j in rng.choice(5, rng.integers(1, 4), replace=False)] for _ in range(n)
        ],
        "codes": [rng.integers(0, 20, rng.integers(1, 3)).tolist() for _ in range(n)],
        "clicks": rng.integers(0, 30, n).tolist(),
        "latency": rng.integers(1, 2000, n).tolist(),
        "score": np.round(rng.normal(50, 20, n), 3).tolist(),
        "ts": (1_700_000_000_000 + np.sort(rng.integers(0, 30 * 86_400_000, n))).tolist(),
    }


def build_synth(rows: dict, out: Path, parts: int, sizes: list[int] | None = None):
    """``parts`` segments of consecutive rows (``sizes`` rows each, default equal);
    returns (schema, segments)."""
    import numpy as np

    schema = Schema.from_json(SYNTH_SCHEMA)
    config = TableConfig.from_json(SYNTH_TABLE)
    n = len(rows["site"])
    bounds = np.cumsum([0, *sizes]) if sizes else None
    chunks = (
        [np.arange(bounds[i], bounds[i + 1]) for i in range(parts)]
        if sizes
        else np.array_split(np.arange(n), parts)
    )
    segments = []
    for i, chunk in enumerate(chunks):
        lo, hi = int(chunk[0]), int(chunk[-1]) + 1
        table = pa.table({k: v[lo:hi] for k, v in rows.items()})
        built = build_segment(table, schema, config, out, segment_name=f"synth_{parts}_{i}")
        segments.append(load_segment(built.path))
    return schema, segments


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory):
    """(rows, schema, one segment, three segments) over the same 3,000 rows."""
    rows = synth_rows(3000, seed=11)
    out = tmp_path_factory.mktemp("synth")
    schema, single = build_synth(rows, out, 1)
    _, three = build_synth(rows, out, 3)
    return rows, schema, single, three
