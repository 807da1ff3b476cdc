"""enableNullHandling over Pinot's clientSalaryNulls example: Pinot's NullHandlingQuickstart
queries, with answers computed from the Avro input itself."""

from __future__ import annotations

import fastavro
import pyarrow as pa
import pytest

from engine.query import run_query
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig
from tests.engine.query import null_conformance as nc

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


def rows_of(segment, sql, options=None):
    response = run_query(sql, [segment], query_options=options)
    assert not response["exceptions"], response["exceptions"]
    return response["resultTable"]["rows"]


def test_the_issues_queries_give_pinots_answers(data):
    """Issue 29 on the quickstart's own table: selections, COUNT(col), arithmetic, IS NULL as
    a group key, ORDER BY and COALESCE, each with null handling on and off."""
    rows, segment = data
    table = "clientSalaryNulls"
    by_id = sorted(rows, key=lambda r: r["clientId"])
    got = rows_of(segment, f"SELECT clientId, salary FROM {table} ORDER BY clientId LIMIT 100", ON)
    assert got == [[r["clientId"], r["salary"]] for r in by_id]
    got = rows_of(segment, f"SELECT salary FROM {table} ORDER BY clientId LIMIT 100")
    assert got == [[INT_MIN if r["salary"] is None else r["salary"]] for r in by_id]

    counted = [sum(r[c] is not None for r in rows) for c in ("salary", "description")]
    sql = f"SELECT COUNT(salary), COUNT(description), COUNT(*) FROM {table}"
    assert rows_of(segment, sql, ON) == [[*counted, len(rows)]]
    assert rows_of(segment, sql) == [[len(rows)] * 3]  # COUNT(col) is COUNT(*) without it

    got = rows_of(segment, f"SELECT salary + 1 FROM {table} ORDER BY clientId LIMIT 100", ON)
    assert got == [[None if r["salary"] is None else r["salary"] + 1.0] for r in by_id]

    nulls = sum(r["description"] is None for r in rows)
    sql = (
        f"SELECT description IS NULL, COUNT(*) FROM {table} GROUP BY description IS NULL ORDER BY 1"
    )
    expected = [[False, len(rows) - nulls], [True, nulls]]
    assert rows_of(segment, sql, ON) == expected
    assert rows_of(segment, sql) == expected  # IS NULL reads the null vector either way
    sql = (f"SELECT SUM(CASE WHEN salary IS NULL THEN 1 ELSE 0 END), "
           f"COUNT(*) FILTER (WHERE salary IS NULL) FROM {table}")  # fmt: skip
    assert rows_of(segment, sql, ON) == [[float(len(rows) - counted[0]), len(rows) - counted[0]]]

    salaries = sorted(r["salary"] for r in rows if r["salary"] is not None)
    missing = len(rows) - len(salaries)
    got = rows_of(segment, f"SELECT salary FROM {table} ORDER BY salary LIMIT 100", ON)
    assert got == [[s] for s in salaries] + [[None]] * missing  # NULLS LAST ascending
    got = rows_of(segment, f"SELECT salary FROM {table} ORDER BY salary DESC LIMIT 100", ON)
    assert got == [[None]] * missing + [[s] for s in reversed(salaries)]  # first descending
    got = rows_of(segment, f"SELECT salary FROM {table} ORDER BY salary NULLS FIRST LIMIT 3", ON)
    assert got == [[None]] * 3

    sql = f"SELECT COALESCE(salary, -1), NULLIF(clientId, clientId) FROM {table} ORDER BY clientId LIMIT 100"
    got = rows_of(segment, sql, ON)
    assert got == [[-1 if r["salary"] is None else r["salary"], None] for r in by_id]
    sql = f"SELECT MIN(salary), MAX(salary), SUM(salary), AVG(salary) FROM {table}"
    total = float(sum(salaries))
    assert rows_of(segment, sql, ON) == [[salaries[0], salaries[-1], total, total / len(salaries)]]
    sql = f"SELECT MIN(salary), SUM(salary), COUNT(salary) FROM {table} WHERE salary IS NULL"
    assert rows_of(segment, sql, ON) == [[None, None, 0]]  # no value: NULL, and a count of 0


def test_null_handling_is_read_from_the_query_option_only(data):
    """The table's null settings decide which nulls are stored; only ``enableNullHandling``
    makes a query treat them as SQL NULL (Pinot: 'nullHandlingEnabled' is not
    'enableNullHandling')."""
    _, segment = data
    sql = "SELECT COUNT(salary) FROM clientSalaryNulls"
    assert rows_of(segment, sql) == rows_of(segment, sql, {"enableNullHandling": "false"})
    assert rows_of(segment, f"SET enableNullHandling=true; {sql}") == rows_of(segment, sql, ON)


def test_a_star_tree_answers_with_null_handling_only_when_no_null_is_read(tmp_path):
    """Pinot's rule (StarTreeUtils): pre-aggregated records hold NULLs' default values, so
    with null handling the tree is used only when the filtered, grouped and aggregated
    columns have no NULL in the segment; without it, IS NULL in the filter rules it out."""
    rows = nc.generate_rows()
    schema = Schema.from_json(nc.SCHEMA)
    config = TableConfig.from_json(nc.table_config("startree"))
    built = build_segment(nc.arrow_rows(rows), schema, config, tmp_path, segment_name="star")
    segment = load_segment(built.path)

    def star_tree_used(sql: str, null_handling: bool) -> bool:
        options = {"enableNullHandling": str(null_handling).lower(), "trace": "true"}
        response = run_query(sql, [segment], table_schema=schema, query_options=options)
        assert not response["exceptions"], response["exceptions"]
        (traced,) = response["traceInfo"]["local"]["segments"]
        return any(o["operator"] == "StarTreeOperator" for o in traced["operators"])

    table = nc.TABLE
    assert star_tree_used(f"SELECT k, SUM(mn), COUNT(*) FROM {table} GROUP BY k", True)
    assert not star_tree_used(f"SELECT k, SUM(m) FROM {table} GROUP BY k", True)  # m has NULLs
    assert not star_tree_used(f"SELECT g, SUM(mn) FROM {table} GROUP BY g", True)  # so has g
    assert not star_tree_used(f"SELECT SUM(mn) FROM {table} WHERE g = 'x'", True)
    assert star_tree_used(f"SELECT g, SUM(m) FROM {table} GROUP BY g", False)
    assert not star_tree_used(f"SELECT SUM(mn) FROM {table} WHERE g IS NULL", False)
    expected = sum(v for v, g in zip(rows["mn"], rows["g"], strict=True) if g is None)
    sql = f"SELECT SUM(mn) FROM {table} WHERE g IS NULL"
    assert rows_of(segment, sql) == [[float(expected)]]
