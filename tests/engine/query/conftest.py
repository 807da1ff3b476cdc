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
