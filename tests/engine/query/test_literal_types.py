"""Literals of equal value and different type (1, 1.0, true) are different expressions:
Python counts them equal, and a cache or memo keyed on expressions once answered
`WHERE s = 1.0` with the rows of an earlier `WHERE s = 1` in the same process."""

from __future__ import annotations

import pyarrow as pa

from engine.query.expressions import Function, Identifier, Literal
from engine.query.runner import QueryEngine
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig

SCHEMA = {
    "schemaName": "lits",
    "dimensionFieldSpecs": [{"name": "s", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "INT"}],
}
TABLE = {"tableName": "lits_OFFLINE", "tableType": "OFFLINE", "segmentsConfig": {}}


def test_literals_of_equal_value_and_other_type_are_not_equal():
    assert Literal(1) != Literal(1.0)
    assert Literal(1) != Literal(True)
    assert Literal(1) == Literal(1)
    assert Literal((1, 2)) != Literal((1.0, 2))
    left = Function("equals", (Identifier("s"), Literal(1)))
    right = Function("equals", (Identifier("s"), Literal(1.0)))
    assert left != right
    assert len({left, right}) == 2


def test_a_query_after_a_similar_one_answers_as_when_run_alone(tmp_path):
    schema = Schema.from_json(SCHEMA)
    config = TableConfig.from_json(TABLE, schema=schema)
    rows = pa.table({"s": ["1", "1.0", "true", "x"], "n": [1, 2, 3, 4]})
    segment = load_segment(build_segment(rows, schema, config, tmp_path, segment_name="l_0").path)
    engine = QueryEngine()

    def matches(where: str) -> list:
        response = engine.run(
            f"SELECT s FROM lits WHERE {where} ORDER BY s", [segment], table_schema=schema
        )
        assert response["exceptions"] == [], response["exceptions"]
        return [row[0] for row in response["resultTable"]["rows"]]

    alone = {where: matches(where) for where in ("s = 1.0", "s = true")}
    engine = QueryEngine()
    assert matches("s = 1") == ["1"]
    for where, rows_alone in alone.items():
        assert matches(where) == rows_alone, where
