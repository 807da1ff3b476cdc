"""The multi-stage engine end to end in one process: planning, stages, two server runners and
the broker's stage 0, with hash, broadcast and singleton exchanges between them, compared
with DuckDB on the same rows. Only the network is replaced: mailboxes deliver in memory and
the broker submits to the runners directly; each "server" reads its half of every table."""

from __future__ import annotations

import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.multistage.compiler import compile_request
from engine.multistage.coordinator import Coordinator
from engine.multistage.fragment import Fragmenter
from engine.multistage.logical import TableInfo
from engine.query.errors import QueryError
from tests.engine.multistage.in_process import (
    SERVERS,
    Transport,
    coordinator,
    next_request_id,
    route,
)
from tests.engine.multistage.in_process import run as run_stages

A = pa.table({
    "k": ["x", "y", "z", None, "x", "y"],
    "v": pa.array([1, 2, 3, None, 5, 6], pa.int32()),
    "d": [1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
})  # fmt: skip
B = pa.table({"k": ["x", "x", "y", "w"], "m": pa.array([10, 20, 30, 40], pa.int32())})
TABLES = {"a": A, "b": B}
INFO = {
    name: TableInfo(name, {f.name: ({"string": "STRING", "int32": "INT", "double": "DOUBLE"}[
        str(f.type)], True) for f in t.schema}, num_docs=t.num_rows * 100)
    for name, t in TABLES.items()
}  # fmt: skip


def _leaf(server: str):
    def read(leaf, segments, deadline, options, keys=()):
        table = TABLES[leaf.table]
        half = table.slice(0, 3) if server == "s1" else table.slice(3)
        for column, key_set in keys:  # a dynamic filter, as the segment scan applies it
            half = half.filter(pc.is_in(half.column(column), value_set=key_set.values.cast(
                half.schema.field(column).type)))  # fmt: skip
        return half.select(leaf.columns).rename_columns(leaf.field_ids).cast(leaf.schema), {}

    return read


@pytest.fixture(scope="module")
def engine():
    return coordinator(_leaf)


def run(engine, sql: str) -> list[list]:
    return run_stages(engine, sql, lambda name: INFO.get(name.lower()))


def reference(sql: str) -> list[list]:
    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    for name, table in TABLES.items():
        con.register(name, table)
    return [list(r) for r in con.execute(sql).fetchall()]


QUERIES = [
    "SELECT k, v FROM a",
    "SELECT a.k, SUM(m), COUNT(*) FROM a JOIN b ON a.k = b.k GROUP BY a.k",
    "SELECT a.k, b.m FROM a LEFT JOIN b ON a.k = b.k",
    "SELECT a.k, b.m FROM a RIGHT JOIN b ON a.k = b.k",
    "SELECT a.k, b.k FROM a FULL JOIN b ON a.k = b.k",
    "SELECT COUNT(*) FROM a, b WHERE a.v < b.m",
    "SELECT k FROM a WHERE k IN (SELECT k FROM b)",
    "SELECT k FROM a WHERE k NOT IN (SELECT k FROM b WHERE k IS NOT NULL)",
    "SELECT k FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND m > 15)",
    "SELECT k, (SELECT MAX(m) FROM b) FROM a",
    "SELECT k, (SELECT COUNT(*) FROM b WHERE b.k = a.k) FROM a",
    # a correlated conjunct on the outer row alone (Pinot's framework_test)
    "SELECT k FROM a WHERE v < (SELECT 0.5 * SUM(m) FROM b WHERE a.v = a.v AND a.k = b.k)",
    "SELECT k, (SELECT COUNT(*) FROM b WHERE b.k = a.k AND a.v > 1) FROM a",
    # a correlated COUNT over no rows is 0 also inside an expression
    "SELECT k, (SELECT COUNT(*) + 1 FROM b WHERE b.k = a.k) FROM a",
    "SELECT k, (SELECT 2 * SUM(m) + COUNT(*) FROM b WHERE b.k = a.k) FROM a",
    # JOIN LATERAL: a plain filter, and an aggregation (one row per outer row)
    "SELECT a.k, x.m FROM a JOIN LATERAL (SELECT m FROM b WHERE b.k = a.k) AS x ON TRUE",
    "SELECT a.k, x.m FROM a, LATERAL (SELECT m FROM b WHERE b.k = a.k) AS x",
    "SELECT a.k, x.m FROM a LEFT JOIN LATERAL (SELECT m FROM b WHERE b.k = a.k) AS x ON TRUE",
    "SELECT a.k, x.m FROM a LEFT JOIN LATERAL (SELECT m FROM b WHERE b.k = a.k) x ON x.m > 15",
    "SELECT a.k, x.mm FROM a JOIN LATERAL (SELECT m FROM b WHERE b.k = a.k AND b.m > a.v)"
    " AS x(mm) ON TRUE",
    "SELECT a.k, x.m FROM a CROSS JOIN LATERAL (SELECT m FROM b) AS x",
    "SELECT a.k, x.s FROM a JOIN LATERAL (SELECT SUM(m) AS s FROM b WHERE b.k = a.k) x ON TRUE",
    "SELECT a.k, x.s FROM a JOIN LATERAL (SELECT SUM(m) AS s FROM b WHERE b.k = a.k) x ON x.s > 1",
    "SELECT * FROM a CROSS JOIN LATERAL (SELECT COUNT(*) AS c, MAX(m) AS mx FROM b"
    " WHERE b.k = a.k AND m > 5) AS x",
    "SELECT a.k, x.s, x.c FROM a LEFT JOIN LATERAL (SELECT SUM(m) AS s, COUNT(*) AS c FROM b"
    " WHERE b.k = a.k AND a.v > 1) AS x ON TRUE",
    "SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) FROM a",
    "SELECT k, SUM(v) OVER (ORDER BY d ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM a",
    "SELECT k FROM a UNION SELECT k FROM b",
    "SELECT k FROM a INTERSECT SELECT k FROM b",
    "SELECT k FROM a EXCEPT SELECT k FROM b",
    "SELECT k FROM a UNION ALL SELECT k FROM b",
    "WITH c AS (SELECT k, v FROM a WHERE v > 1) SELECT c1.k, c2.v FROM c c1 JOIN c c2 ON c1.k = c2.k",
    "SELECT k, AVG(d), MIN(v), MAX(v) FROM a GROUP BY k HAVING COUNT(*) > 1",
    "SELECT v / 2, v % 4, -v FROM a",
    "SELECT COUNT(DISTINCT k), SUM(v) FROM a",
    # an OR under an AND keeps its parentheses when the filter is split and joined again
    "SELECT k, v FROM a WHERE (v = d OR d = v + 0.5) AND d > v",
    "SELECT a.k, m FROM a JOIN b ON a.k = b.k WHERE (v = 1 OR m = 30) AND d < m",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_equal_to_duckdb(engine, sql):
    got = sorted(run(engine, sql), key=repr)
    assert got == sorted(reference(sql), key=repr)


def test_order_limit_offset_is_kept(engine):
    sql = "SELECT k, v FROM a ORDER BY v DESC NULLS LAST LIMIT 3 OFFSET 1"
    assert run(engine, sql) == reference(sql)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT a.k FROM a RIGHT JOIN LATERAL (SELECT m FROM b WHERE b.k = a.k) x ON TRUE",
         "RIGHT JOIN LATERAL is not supported"),
        ("SELECT a.k FROM a LEFT JOIN LATERAL (SELECT SUM(m) s FROM b WHERE b.k = a.k) x"
         " ON x.s > 1", "LEFT JOIN LATERAL over an aggregation must be ON TRUE"),
        ("SELECT a.k FROM a JOIN LATERAL (SELECT SUM(m) s FROM b WHERE b.m > a.v) x ON TRUE",
         "its WHERE must equate an inner column with an outer one"),
        ("SELECT a.k FROM a JOIN LATERAL (SELECT SUM(m) s FROM b WHERE b.k = a.k LIMIT 1) x"
         " ON TRUE", "without GROUP BY, HAVING, DISTINCT or LIMIT"),
    ],
)  # fmt: skip
def test_lateral_forms_not_supported_say_why(engine, sql, message):
    with pytest.raises(QueryError, match=message):
        run(engine, sql)


def test_scalar_subquery_of_many_rows_fails(engine):
    with pytest.raises(QueryError, match="More than one row"):
        run(engine, "SELECT k, (SELECT m FROM b) FROM a")


def test_join_over_its_row_limit_fails_with_pinot_error(engine):
    sql = "SET maxRowsInJoin=2; SELECT a.k, b.m FROM a JOIN b ON a.k = b.k"
    with pytest.raises(QueryError, match="reached number of rows limit: 2") as err:
        run(engine, sql)
    assert err.value.error_code == 245


class _DeadServer(Transport):
    def submit(self, address, payload, deadline):
        if address == "s2:1":
            raise ConnectionResetError("connection reset by peer")
        return super().submit(address, payload, deadline)


def test_a_server_that_dies_fails_the_query_naming_it_at_once(engine):
    dead = Coordinator(engine.mailboxes, engine.client, _DeadServer(engine.transport.runners))
    compiled = compile_request("SELECT a.k, SUM(m) FROM a JOIN b ON a.k = b.k GROUP BY a.k", {},
                               lambda name: INFO.get(name.lower()))  # fmt: skip
    stages = Fragmenter(compiled.typing, route, SERVERS, "broker:1").fragment(compiled.physical)
    started = time.monotonic()
    _, outcome = dead.execute(compiled, stages, next_request_id(), started + 20, SERVERS)
    assert outcome.error is not None and "s2" in outcome.error.message
    assert time.monotonic() - started < 10  # not the 20 s deadline: no wait for its rows
