"""enableNullHandling over Pinot's clientSalaryNulls example: Pinot's NullHandlingQuickstart
queries, with answers computed from the Avro input itself."""

from __future__ import annotations

import fastavro
import pyarrow as pa
import pytest

from engine.query import run_query
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig

ON = {"enableNullHandling": "true"}
INT_MIN = -(2**31)  # an INT dimension's default null value, stored where the input was null


@pytest.fixture(scope="module")
def data(pinot_examples, tmp_path_factory):
    base = pinot_examples / "batch" / "clientSalaryNulls"
    schema = Schema.from_json((base / "clientSalaryNulls_schema.json").read_text())
    config = TableConfig.from_json(
        (base / "clientSalaryNulls_offline_table_config.json").read_text(), schema
    )
    with (base / "rawdata" / "clientSalaryNulls_data.avro").open("rb") as handle:
        rows = list(fastavro.reader(handle))
    out = tmp_path_factory.mktemp("nulls")
    segment = load_segment(build_segment(pa.Table.from_pylist(rows), schema, config, out).path)
    return rows, segment


def answer(segment, sql, options=None):
    return run_query(sql, [segment], query_options=options)["resultTable"]["rows"][0][0]


def test_null_handling_queries_give_pinots_answers(data):
    rows, segment = data
    salaries = [r["salary"] for r in rows if r["salary"] is not None]
    nulls = len(rows) - len(salaries)
    assert 0 < nulls < len(rows)
    table = "clientSalaryNulls"
    assert answer(segment, f"SELECT COUNT(*) FROM {table}", ON) == len(rows)
    assert answer(segment, f"SELECT COUNT(*) FROM {table} WHERE salary IS NULL", ON) == nulls
    described = sum(r["description"] is not None for r in rows)
    sql = f"SELECT COUNT(*) FROM {table} WHERE description IS NOT NULL"
    assert answer(segment, sql, ON) == described
    assert answer(segment, f"SELECT MIN(salary) FROM {table}", ON) == min(salaries)
    assert answer(segment, f"SELECT MIN(salary) FROM {table}") == INT_MIN
    below = sum(s < 80000 for s in salaries)
    sql = f"SELECT COUNT(*) FROM {table} WHERE salary < 80000"
    assert answer(segment, sql, ON) == below
    assert answer(segment, sql) == below + nulls  # nulls are stored as INT_MIN
    # unknown stays unknown under NOT: a null salary matches neither side
    sql = f"SELECT COUNT(*) FROM {table} WHERE NOT salary < 80000"
    assert answer(segment, sql, ON) == len(salaries) - below
    sql = f"SELECT SUM(salary), MAX(salary) FROM {table} WHERE clientId >= 0"
    result = run_query(sql, [segment], query_options=ON)["resultTable"]["rows"][0]
    assert result == [float(sum(salaries)), float(max(salaries))]
