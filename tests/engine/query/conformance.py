"""Pinot's 200 airline integration-test queries, checked against DuckDB on the same rows.

Reusable: ``run_conformance(executor, table_name, pinot_examples)`` takes any callable
``sql -> BrokerResponse dict`` (in-process ``run_query`` here; a real broker later) and
returns one ``QueryCheck`` per query.

The reference is DuckDB over the raw Avro rows after Pinot's null defaults (dimensions:
INT/LONG MIN_VALUE, FLOAT/DOUBLE -Infinity, STRING "null"; an empty or missing multi-value
becomes ``[default]``). Where Pinot's semantics differ from plain SQL we follow Pinot:

* no LIMIT means LIMIT 10; an aggregation-only query always returns one row;
* SUM/MIN/MAX/AVG return DOUBLE and COUNT returns LONG; over no rows Pinot returns
  SUM 0.0, MIN +Infinity, MAX -Infinity, AVG -Infinity where SQL returns NULL;
* multi-value columns in WHERE match when any value matches (=, IN, <, BETWEEN ...) and,
  for != / NOT IN, when no value is excluded (DuckDB gets ``list_filter`` rewrites);
* ties: when the ORDER BY does not fix the row order (or there is none), any valid choice
  of rows is right, so rows are compared as multisets against every row DuckDB allows and
  the ORDER BY keys as a sequence;
* integers (and integral doubles) compare exactly, other doubles to 12 significant digits.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import fastavro
import pyarrow as pa
import sqlglot
from sqlglot import exp

AIRLINE_DIR = "batch/airlineStats"
QUERIES_FILE = "queries/airline_test_queries_200.sql"
_AGG_TYPES = {"sum": "DOUBLE", "min": "DOUBLE", "max": "DOUBLE", "avg": "DOUBLE", "count": "LONG"}
_EMPTY_AGG = {
    "sum": 0.0,
    "min": float("inf"),
    "max": float("-inf"),
    "avg": float("-inf"),
    "count": 0,
}


@dataclass
class QueryCheck:
    sql: str
    ok: bool
    message: str = ""


def airline_schema(pinot_examples: Path) -> dict:
    return json.loads((pinot_examples / AIRLINE_DIR / "airlineStats_schema.json").read_text())


def airline_table_config(pinot_examples: Path) -> dict:
    return json.loads(
        (pinot_examples / AIRLINE_DIR / "airlineStats_offline_table_config.json").read_text()
    )


def airline_avro_files(pinot_examples: Path) -> list[Path]:
    return sorted((pinot_examples / AIRLINE_DIR / "rawdata").rglob("*.avro"))


def read_avro(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return list(fastavro.reader(fh))


def load_queries(pinot_examples: Path) -> list[str]:
    queries = []
    for line in (pinot_examples / QUERIES_FILE).read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            queries.append(json.loads(line)["sql"])
    return queries


def _schema_fields(schema: dict) -> list[tuple[str, str, bool, str]]:
    """(name, dataType, singleValue, fieldType) for every column."""
    out = []
    for key, kind in (("dimensionFieldSpecs", "DIMENSION"), ("metricFieldSpecs", "METRIC"),
                      ("dateTimeFieldSpecs", "DATE_TIME")):  # fmt: skip
        for spec in schema.get(key) or []:
            out.append((spec["name"], spec["dataType"], spec.get("singleValueField", True), kind))
    return out


def _null_default(data_type: str, field_type: str):
    if field_type == "METRIC":
        return 0.0 if data_type in ("FLOAT", "DOUBLE") else 0
    return {"INT": -(2**31), "LONG": -(2**63), "FLOAT": float("-inf"), "DOUBLE": float("-inf"),
            "STRING": "null", "BOOLEAN": 0, "TIMESTAMP": 0}[data_type]  # fmt: skip


_ARROW = {"INT": pa.int32(), "LONG": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
          "STRING": pa.string(), "BOOLEAN": pa.int32(), "TIMESTAMP": pa.int64()}  # fmt: skip


def reference_table(schema: dict, records: list[dict]) -> pa.Table:
    """The rows as Pinot stores them: null defaults applied, ``ts``/``tsRaw`` derived from
    DaysSinceEpoch by the table's ``fromEpochDays`` transform (epoch millis)."""
    columns = {}
    for name, data_type, single, field_type in _schema_fields(schema):
        default = _null_default(data_type, field_type)
        if name in ("ts", "tsRaw"):
            values = [r["DaysSinceEpoch"] * 86_400_000 for r in records]
        elif single:
            values = [default if r.get(name) is None else r[name] for r in records]
        else:
            values = [
                [v for v in (r.get(name) or []) if v is not None] or [default] for r in records
            ]
        arrow_type = _ARROW[data_type] if single else pa.list_(_ARROW[data_type])
        columns[name] = pa.array(values, type=arrow_type)
    return pa.table(columns)


def duckdb_connection(table: pa.Table, threads: int = 2) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET threads={threads}")
    con.register("reference_rows", table)
    con.execute("CREATE TABLE mytable AS SELECT * FROM reference_rows")
    return con


# ---- Pinot SQL -> DuckDB SQL ----------------------------------------------------------------


def mv_rewrite(node: exp.Expression, mv_columns: set[str]) -> exp.Expression:
    column = node.this if isinstance(node, exp.In | exp.Between | exp.Binary) else None
    if not isinstance(column, exp.Column) or column.name not in mv_columns:
        return node
    name = column.sql(dialect="duckdb")
    element = exp.column("x")
    predicate = node.copy()
    predicate.set("this", element)
    exclusive = isinstance(node, exp.NEQ)
    if exclusive:
        predicate = exp.EQ(this=element, expression=node.expression.copy())
    inner = predicate.sql(dialect="duckdb")
    rewritten = f"len(list_filter({name}, x -> {inner})) {'= 0' if exclusive else '> 0'}"
    return sqlglot.parse_one(rewritten, read="duckdb")


def to_duckdb(sql: str, mv_columns: set[str]) -> str:
    """The Pinot query as DuckDB SQL without LIMIT/OFFSET (the limit is applied when
    comparing). NOT IN on a multi-value column becomes "no value is in the list"."""
    tree = sqlglot.parse_one(sql)
    tree.set("limit", None)
    tree.set("offset", None)

    def transform(node):
        if isinstance(node, exp.Not) and isinstance(node.this, exp.In):
            inner = node.this
            if isinstance(inner.this, exp.Column) and inner.this.name in mv_columns:
                rewritten = mv_rewrite(inner, mv_columns)
                return sqlglot.parse_one(
                    rewritten.sql(dialect="duckdb").replace("> 0", "= 0"), read="duckdb"
                )
        if isinstance(
            node, exp.In | exp.Between | exp.EQ | exp.NEQ | exp.LT | exp.LTE | exp.GT | exp.GTE
        ):
            return mv_rewrite(node, mv_columns)
        return node

    return tree.transform(transform).sql(dialect="duckdb")


# ---- comparison -------------------------------------------------------------------------------


def _norm(value):
    if isinstance(value, str):
        if value in ("Infinity", "-Infinity", "NaN"):
            return float(value.replace("Infinity", "inf"))
        return value
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)  # 5.0 == 5, exactly
        return float(f"{value:.12g}")
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return value


def _row(values) -> tuple:
    return tuple(_norm(v) for v in values)


def _limit(tree: exp.Select) -> int:
    limit = tree.args.get("limit")
    return int(limit.expression.name) if limit is not None else 10


def check_query(sql: str, response: dict, con, mv_columns: set[str]) -> QueryCheck:
    if response.get("exceptions"):
        return QueryCheck(sql, False, f"exceptions: {response['exceptions']}")
    table = response.get("resultTable")
    if table is None:
        return QueryCheck(sql, False, "no resultTable")
    tree = sqlglot.parse_one(sql)
    select = tree.expressions
    got = [_row(r) for r in table["rows"]]
    if len(table["dataSchema"]["columnNames"]) != len(select):
        return QueryCheck(
            sql, False, f"{len(table['dataSchema']['columnNames'])} columns, expected {len(select)}"
        )
    aggs = [s.key if isinstance(s, exp.AggFunc) else None for s in select]
    for i, agg in enumerate(aggs):
        if agg in _AGG_TYPES and table["dataSchema"]["columnDataTypes"][i] != _AGG_TYPES[agg]:
            return QueryCheck(
                sql,
                False,
                f"column {i} type {table['dataSchema']['columnDataTypes'][i]}, Pinot gives {_AGG_TYPES[agg]}",
            )
    expected_all = con.execute(to_duckdb(sql, mv_columns)).fetchall()
    group = tree.args.get("group")
    limit = _limit(tree)
    if any(aggs) and group is None:
        fixed = [
            _EMPTY_AGG.get(a) if v is None and a else v
            for v, a in zip(expected_all[0], aggs, strict=True)
        ]
        expected = [_row(fixed)]
        return QueryCheck(sql, got == expected, f"got {got}, expected {expected}")
    expected_rows = [_row(r) for r in expected_all]
    want = min(limit, len(expected_rows))
    if len(got) != want:
        return QueryCheck(sql, False, f"{len(got)} rows, expected {want}")
    order = tree.args.get("order")
    order_sql = [o.this.sql() for o in order.expressions] if order else []
    select_sql = [s.sql() for s in select]
    key_positions = [select_sql.index(o) for o in order_sql if o in select_sql]
    if order and len(key_positions) == len(order_sql):
        if [tuple(r[i] for i in key_positions) for r in got] != [
            tuple(r[i] for i in key_positions) for r in expected_rows[:want]
        ]:
            return QueryCheck(
                sql, False, f"ORDER BY keys differ: got {got[:5]}, expected {expected_rows[:5]}"
            )
        key_cols = set(key_positions)
        if key_cols == set(range(len(select))) or (
            group is not None and _covers_group(order_sql, group)
        ):
            return QueryCheck(
                sql, got == expected_rows[:want], f"got {got[:5]}, expected {expected_rows[:5]}"
            )
    missing = Counter(got) - Counter(expected_rows)
    return QueryCheck(sql, not missing, f"rows not in the reference: {list(missing)[:3]}")


def _covers_group(order_sql: list[str], group: exp.Group) -> bool:
    return {g.sql() for g in group.expressions} <= set(order_sql)


def run_conformance(
    executor: Callable[[str], dict], table_name: str, pinot_examples: Path, *, con=None
) -> list[QueryCheck]:
    """Run all 200 queries (``mytable`` replaced by ``table_name``) through ``executor`` and
    check each against DuckDB."""
    schema = airline_schema(pinot_examples)
    mv_columns = {name for name, _, single, _ in _schema_fields(schema) if not single}
    if con is None:
        records = [r for path in airline_avro_files(pinot_examples) for r in read_avro(path)]
        con = duckdb_connection(reference_table(schema, records))
    checks = []
    for sql in load_queries(pinot_examples):
        try:
            response = executor(sql.replace("mytable", table_name))
            checks.append(check_query(sql, response, con, mv_columns))
        except Exception as err:  # report, keep going: one bad query must not hide the rest
            checks.append(QueryCheck(sql, False, f"{type(err).__name__}: {err}"))
    return checks
