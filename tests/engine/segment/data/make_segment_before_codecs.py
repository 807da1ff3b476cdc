"""How segment_before_codecs.tar.gz was made: this script, run with the code of commit
58af34f (before compression codecs), ``python make_segment_before_codecs.py OUT.tar.gz``.
tests/engine/segment/test_codecs.py reads it with today's code (format compatibility)."""

import pathlib
import sys
import tempfile

import pyarrow as pa

from engine.segment import build_segment, pack_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

schema = Schema.from_json(
    {
        "schemaName": "old",
        "dimensionFieldSpecs": [
            {"name": "city", "dataType": "STRING"},
            {"name": "note", "dataType": "STRING"},
        ],
        "metricFieldSpecs": [{"name": "n", "dataType": "INT"}, {"name": "x", "dataType": "DOUBLE"}],
    }
)
cfg = TableConfig.from_json(
    {
        "tableName": "old",
        "tableType": "OFFLINE",
        "segmentsConfig": {"replication": "1"},
        "tableIndexConfig": {"noDictionaryColumns": ["note", "n", "x"]},
    }
)
rows = 3000
t = pa.table(
    {
        "city": [f"c{i % 7}" for i in range(rows)],
        "note": [f"n{i % 10}" for i in range(rows)],
        "n": pa.array(range(rows), pa.int32()),
        "x": pa.array([(i % 100) * 0.5 for i in range(rows)]),
    }
)
d = pathlib.Path(tempfile.mkdtemp())
r = build_segment(t, schema, cfg, d, segment_name="old_0")
pack_segment(r.path, pathlib.Path(sys.argv[1]))
print(r.metadata.columns["note"].forward_format, r.metadata.columns["n"].forward_format)
