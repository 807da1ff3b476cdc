"""Schema evolution on one segment: columns added to the schema read as their default in a
segment built before (virtual), and the same once a reload writes them (materialized), with
null handling on and off; a stale auto-generated column is rebuilt."""

from __future__ import annotations

import copy

import pyarrow as pa
import pytest

from engine.query import run_query
from engine.segment import build_segment, load_segment
from engine.segment.default_column import adopt_schema, columns_to_generate, materialize
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

OLD = {
    "schemaName": "evolve",
    "enableColumnBasedNullHandling": True,
    "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "amount", "dataType": "INT"}],
}
NEW = copy.deepcopy(OLD)
NEW["dimensionFieldSpecs"] += [
    {"name": "region", "dataType": "STRING"},  # nullable: a null vector of every doc
    {"name": "code", "dataType": "INT", "notNull": True, "defaultNullValue": 5},
    {"name": "tags", "dataType": "STRING", "singleValueField": False},
]
NEW["metricFieldSpecs"] += [{"name": "score", "dataType": "DOUBLE"}]
CONFIG = {"tableName": "evolve", "tableType": "OFFLINE", "segmentsConfig": {"replication": "1"}}
QUERIES = [
    "SELECT region, code, score, COUNT(*) FROM evolve GROUP BY region, code, score",
    "SELECT COUNT(*) FROM evolve WHERE region = 'null' AND code = 5",
    "SELECT COUNT(*) FROM evolve WHERE region IS NULL",
    "SELECT COUNT(region), COUNT(code), SUM(score), MIN(code) FROM evolve",
    "SELECT city, tags FROM evolve ORDER BY city LIMIT 3",
    "SELECT tags, COUNT(*) FROM evolve GROUP BY tags",
    "SELECT * FROM evolve ORDER BY amount LIMIT 2",
    "SELECT COUNT(*) FROM evolve WHERE code > 4 AND score < 1",
]


@pytest.fixture
def old_segment(tmp_path):
    rows = pa.table({"city": ["a", "b", "c", "a"], "amount": pa.array([1, 2, 3, 4], pa.int32())})
    built = build_segment(rows, Schema.from_json(OLD), TableConfig.from_json(CONFIG),
                          tmp_path, segment_name="evolve_0")  # fmt: skip
    return built.path


def _answers(segment, schema: Schema, null_handling: bool) -> list:
    out = []
    for sql in QUERIES:
        options = {"enableNullHandling": "true"} if null_handling else None
        response = run_query(sql, [segment], table_schema=schema, query_options=options)
        assert not response["exceptions"], (sql, response["exceptions"])
        out.append(response["resultTable"]["rows"])
    return out


@pytest.mark.parametrize("null_handling", [False, True])
def test_added_columns_read_as_defaults_then_the_same_once_written(old_segment, null_handling):
    schema = Schema.from_json(NEW)
    nullable = schema.nullable_columns(False)
    segment = load_segment(old_segment)
    # before a schema is adopted, the added column is unknown to this segment
    unknown = run_query("SELECT region FROM evolve", [segment], table_schema=schema)
    assert unknown["exceptions"][0]["errorCode"] == 710
    adopt_schema(segment, schema, nullable)
    virtual = _answers(segment, schema, null_handling)
    grouped, matched, is_null, counts = virtual[:4]
    if null_handling:
        assert grouped == [[None, 5, None, 4]]
        assert matched == [[0]]  # a NULL region equals nothing
        assert counts == [[0, 4, None, 5]]
    else:
        assert grouped == [["null", 5, 0.0, 4]]
        assert matched == [[4]]
        assert counts == [[4, 4, 0.0, 5]]
    assert is_null == [[4]]  # IS NULL reads the null vector either way
    assert virtual[5] == [["null", 4]]

    names = [spec.name for spec in columns_to_generate(segment.metadata, schema)]
    assert names == ["region", "code", "tags", "score"]
    materialize(old_segment, columns_to_generate(segment.metadata, schema), nullable)
    written = load_segment(old_segment)
    assert columns_to_generate(written.metadata, schema) == []  # needReload is false now
    assert written.metadata.columns["region"].auto_generated
    assert "nullvec" in written.metadata.columns["region"].indexes
    assert "nullvec" not in written.metadata.columns["code"].indexes  # notNull
    assert _answers(written, schema, null_handling) == virtual


def test_a_stale_auto_generated_column_is_rebuilt(old_segment):
    schema = Schema.from_json(NEW)
    materialize(old_segment, columns_to_generate(load_segment(old_segment).metadata, schema),
                schema.nullable_columns(False))  # fmt: skip
    changed = copy.deepcopy(NEW)
    changed["dimensionFieldSpecs"][2]["defaultNullValue"] = 9  # code's default: 5 -> 9
    changed = Schema.from_json(changed)
    stale = columns_to_generate(load_segment(old_segment).metadata, changed)
    assert [spec.name for spec in stale] == ["code"]
    materialize(old_segment, stale, changed.nullable_columns(False))
    segment = load_segment(old_segment)
    response = run_query("SELECT code, COUNT(*) FROM evolve GROUP BY code", [segment],
                         table_schema=changed)  # fmt: skip
    assert response["resultTable"]["rows"] == [[9, 4]]
    # stored columns are never rewritten, whatever the schema says about them
    assert load_segment(old_segment).metadata.columns["city"].auto_generated is False
