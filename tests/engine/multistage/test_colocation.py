"""Colocated joins and stageParallelism in one process: two tables partitioned alike (Murmur,
2 partitions, one segment per partition) on two server runners that read exactly the
segments placement gives them, compared with DuckDB; placement falls back to the hash
shuffle when a partition's segments are on different servers."""

from __future__ import annotations

import itertools
import time

import duckdb
import pyarrow as pa
import pytest

from engine.common.types import DataType
from engine.multistage.compiler import compile_request
from engine.multistage.fragment import Fragmenter, place
from engine.multistage.stats import stage_stats
from engine.query.errors import QueryValidationError
from engine.spi.partition import partition_function
from tests.engine.multistage.test_stages_in_process import INFO as PLAIN
from tests.engine.multistage.test_stages_in_process import SERVERS, engine  # noqa: F401

FUNCTION = partition_function("Murmur", 2)
ORDERS = pa.table({"k": pa.array([1, 2, 3, 4, 5, 6, 7, 8, None], pa.int32()),
                   "v": pa.array(range(9), pa.int32())})  # fmt: skip
ITEMS = pa.table({"k": pa.array([1, 1, 2, 5, 8, 9, 10], pa.int32()),
                  "m": pa.array([10, 11, 20, 50, 80, 90, 100], pa.int32())})  # fmt: skip
TABLES = {"orders": ORDERS, "items": ITEMS}
_IDS = itertools.count(10_000)


def _partition(value) -> int:
    return FUNCTION.partitions_of_values([value if value is not None else -2147483648],
                                         DataType.INT)[0]  # fmt: skip


def _segments() -> dict[str, pa.Table]:
    """One segment per partition of each table, as a partitioned upload makes them."""
    out = {}
    for name, table in TABLES.items():
        ids = [_partition(k) for k in table.column("k").to_pylist()]
        for p in (0, 1):
            out[f"{name}_p{p}"] = table.filter(pa.array([i == p for i in ids]))
    return out


SEGMENTS = _segments()


def info(name: str, **changes):
    from dataclasses import replace

    base = PLAIN["a"]
    columns = {"k": ("INT", True), "v" if name == "orders" else "m": ("INT", True)}
    fields = {"partition_column": "k", "partition_function": "Murmur", "num_partitions": 2,
              "num_docs": 10_000_000, **changes}  # fmt: skip
    return replace(base, name=name, columns=columns, **fields)


CATALOG = {"orders": info("orders"), "items": info("items")}


def _reader(leaf, segments, deadline, options, keys=()):
    names = [s for names in segments.values() for s in names]
    parts = [SEGMENTS[n] for n in names if n.startswith(leaf.table)]
    table = pa.concat_tables(parts) if parts else TABLES[leaf.table].slice(0, 0)
    return table.select(leaf.columns).rename_columns(leaf.field_ids).cast(leaf.schema), {}


@pytest.fixture(scope="module")
def cluster(engine):  # noqa: F811
    for runner in engine.transport.runners.values():
        runner.leaf_reader = _reader
    return engine


def holders(items_p1: tuple[str, ...] = ("s2",), absent=()):
    """Partition 0 of both tables on s1, partition 1 of orders on s2, of items on
    ``items_p1``; no segment for the (table, partition)s ``absent``."""
    where = {("orders", 0): ("s1",), ("items", 0): ("s1",), ("orders", 1): ("s2",),
             ("items", 1): items_p1}  # fmt: skip

    def partitions(raw, column):
        assert column == "k"
        return {p: [(f"{raw}_OFFLINE", f"{raw}_p{p}", where[raw, p])] for p in (0, 1)
                if (raw, p) not in absent}, ""  # fmt: skip

    def route(raw, everything_on=None):
        out: dict = {}
        for p in (0, 1):
            server = where[raw, p][0]
            out.setdefault(server, {}).setdefault(f"{raw}_OFFLINE", []).append(f"{raw}_p{p}")
        return out

    return partitions, route


def run(cluster, sql: str, options=None, items_p1=("s2",), parallelism=1, catalog=CATALOG,
        absent=()):  # fmt: skip
    compiled = compile_request(sql, options or {}, lambda name: catalog.get(name.lower()))
    partitions, route = holders(items_p1, absent)
    templates = Fragmenter(compiled.typing).cut(compiled.physical)
    stages = place(templates, route, SERVERS, "broker:1", partitions, parallelism)
    table, outcome = cluster.execute(compiled, stages, next(_IDS), time.monotonic() + 30,
                                     SERVERS)  # fmt: skip
    if outcome.error is not None:
        raise outcome.error
    rows = [list(r.values()) for r in table.to_pylist()]
    return rows, stages, stage_stats(stages, outcome.stats)


def reference(sql: str) -> list[list]:
    con = duckdb.connect()
    for name, table in TABLES.items():
        con.register(name, table)
    return [list(r) for r in con.execute(sql).fetchall()]


def _sorted(rows):
    return sorted(rows, key=lambda r: [(v is None, v) for v in r])


JOINS = [
    "SELECT o.k, o.v, i.m FROM orders o JOIN items i ON o.k = i.k",
    "SELECT o.k, o.v, i.m FROM orders o LEFT JOIN items i ON o.k = i.k",
    "SELECT o.k, i.k, i.m FROM orders o RIGHT JOIN items i ON o.k = i.k",
    "SELECT o.k, i.k FROM orders o FULL JOIN items i ON o.k = i.k",
    "SELECT o.k, COUNT(*), SUM(i.m) FROM orders o JOIN items i ON o.k = i.k AND i.m > 10 "
    "WHERE o.v < 7 GROUP BY o.k",
]


def distributions(stages) -> list[str]:
    return sorted(s.distribution for s in stages if s.distribution)


@pytest.mark.parametrize("sql", JOINS)
def test_colocated_join_equals_duckdb_and_moves_nothing_through_a_shuffle(cluster, sql):
    rows, stages, stats = run(cluster, sql)
    assert _sorted(rows) == _sorted(reference(sql))
    assert distributions(stages).count("partitioned") == 2
    joins = [s for s in stages if any(r.stage for r in s.receives) and s.id
             and any(st.distribution == "partitioned" for st in stages
                     if st.to_stage == s.id)]  # fmt: skip
    assert [w.server for w in joins[0].workers] == ["s1", "s2"]  # one per partition
    assert _hash_rows(stats) == 0
    shuffled, _, shuffled_stats = run(cluster, sql, {"inferPartitionHint": "false"})
    assert _sorted(shuffled) == _sorted(rows)
    assert _hash_rows(shuffled_stats) > 0


def _hash_rows(node: dict) -> int:
    """Rows hash-shuffled into a join, by the response's stage stats."""
    into_join = [c for c in node["children"] if "HASH_JOIN" in node["operators"]]
    own = sum(c["emittedRows"] for c in into_join if c.get("distribution") == "HASH")
    return own + sum(_hash_rows(c) for c in node["children"])


def test_a_partition_split_over_servers_falls_back_to_the_shuffle(cluster):
    sql = JOINS[1]
    rows, stages, _ = run(cluster, sql, items_p1=("s1",))
    assert _sorted(rows) == _sorted(reference(sql))
    assert "partitioned" not in distributions(stages)
    reasons = {s.fallback for s in stages if s.fallback}
    assert reasons == {"no server holds every segment of partition 1 of items and orders"}
    # a partition on both servers (replicas) is placed on the one that has the other table
    rows, stages, _ = run(cluster, sql, items_p1=("s1", "s2"))
    assert _sorted(rows) == _sorted(reference(sql))
    assert distributions(stages).count("partitioned") == 2


def test_a_partition_one_table_lacks_gets_a_worker_reading_nothing_of_it(cluster):
    sql = JOINS[3]  # FULL: the orders of partition 1 come out unmatched
    rows, stages, _ = run(cluster, sql, absent={("items", 1)})
    con = duckdb.connect()
    con.register("orders", ORDERS)
    con.register("items", SEGMENTS["items_p0"])
    assert _sorted(rows) == _sorted([list(r) for r in con.execute(sql).fetchall()])
    assert distributions(stages).count("partitioned") == 2
    items_leaf = next(s for s in stages if s.leaves and s.leaves[0].table == "items")
    assert [w.segments for w in items_leaf.workers] == [{"items_OFFLINE": ["items_p0"]}, {}]


def test_explain_says_colocated_or_why_not():
    compiled = compile_request("EXPLAIN PLAN FOR " + JOINS[0], {},
                               lambda n: CATALOG.get(n.lower()))  # fmt: skip
    assert compiled.explain().count("distribution=[hash[0]], colocated=[true]") == 2


@pytest.mark.parametrize(
    ("options", "hint", "catalog"),
    [
        ({}, "/*+ joinOptions(is_colocated_by_join_keys='false') */", CATALOG),
        ({}, "/*+ joinOptions(right_distribution_type='hash') */", CATALOG),
        ({"inferPartitionHint": "false"}, "", CATALOG),
        ({}, "", {**CATALOG, "items": info("items", num_partitions=4)}),
        ({}, "", {**CATALOG, "items": info("items", partition_function="Modulo")}),
        ({}, "", {**CATALOG, "items": info("items", partition_column="m")}),
    ],
)
def test_not_colocated_unless_partitioned_alike_and_allowed(options, hint, catalog):
    sql = f"SELECT {hint} o.v, i.m FROM orders o JOIN items i ON o.k = i.k"
    compiled = compile_request(sql, options, lambda n: catalog.get(n.lower()))
    assert "colocated" not in compiled.explain()


def test_table_hints_colocate_when_partition_hints_are_off():
    hint = "/*+ tableOptions(partition_key='k', partition_function='Murmur', partition_size='2') */"
    sql = f"SELECT o.v, i.m FROM orders o {hint} JOIN items i {hint} ON o.k = i.k"
    compiled = compile_request(sql, {"inferPartitionHint": "false"},
                               lambda n: CATALOG.get(n.lower()))  # fmt: skip
    assert compiled.explain().count("colocated=[true]") == 2


def test_stage_parallelism_runs_that_many_workers_per_server(cluster):
    sql = "SELECT o.k, COUNT(*) FROM orders o JOIN items i ON o.k = i.k GROUP BY o.k"
    options = {"inferPartitionHint": "false", "stageParallelism": "3"}
    compiled = compile_request(sql, options, lambda n: CATALOG.get(n.lower()))
    assert compiled.limits.parallelism == 3
    rows, stages, _ = run(cluster, sql, options, parallelism=3)
    assert _sorted(rows) == _sorted(reference(sql))
    hashed = [s for s in stages if any(st.distribution == "hash" and st.to_stage == s.id
                                       for st in stages)]  # fmt: skip
    assert hashed and all(len(s.workers) == 6 for s in hashed)
    assert all(sorted(w.server for w in s.workers) == ["s1"] * 3 + ["s2"] * 3 for s in hashed)


@pytest.mark.parametrize("value", ["0", "65", "many"])
def test_bad_stage_parallelism_is_a_clear_error(value):
    with pytest.raises(QueryValidationError, match="stageParallelism"):
        compile_request("SELECT o.v FROM orders o JOIN items i ON o.k = i.k",
                        {"stageParallelism": value}, lambda n: CATALOG.get(n.lower()))  # fmt: skip
