"""Colocated joins through the real controller, broker and two servers: tables partitioned
alike on the join key and placed by partition (``bench.colocated``) join without a shuffle
and give DuckDB's answers, the same as the hash-shuffled plan; a table whose partitions are
all on one server falls back to the shuffle, and EXPLAIN says why."""

from __future__ import annotations

import time

import duckdb
import pytest
import requests

from bench import colocated
from bench.multistage import same

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHUFFLE = "/*+ joinOptions(left_distribution_type='hash', right_distribution_type='hash') */"
QUERIES = [
    "SELECT {hint} o.cust, COUNT(*), SUM(o.amount), MAX(c.credit) FROM orders o "
    "JOIN customers c ON o.cust = c.cust GROUP BY o.cust",
    "SELECT {hint} o.cust, o.amount, c.credit FROM orders o LEFT JOIN customers c "
    "ON o.cust = c.cust WHERE o.amount < 40",
    "SELECT {hint} COUNT(*), COUNT(o.cust), COUNT(c.cust) FROM orders o "
    "FULL JOIN customers c ON c.cust = o.cust AND o.amount > 250",
]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from tests.cluster_e2e.conftest import start_cluster, stop_cluster

    workdir = tmp_path_factory.mktemp("colocated")
    cluster = start_cluster(zookeeper.address, workdir)
    try:
        tables = colocated.generate(3000, 400)
        tables["customers_far"] = tables["customers"]
        for name, table in tables.items():
            colocated.load(cluster.controller_url, workdir, name, table,
                           spread=name != "customers_far", segments_per_partition=2)  # fmt: skip
        for name, table in tables.items():
            _wait_rows(cluster.broker_url, name, table.num_rows)
        yield cluster, tables
    finally:
        stop_cluster(cluster)


def _wait_rows(broker: str, table: str, rows: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        got = requests.post(f"{broker}/query/sql", json={"sql": f"SELECT COUNT(*) FROM {table}"},
                            timeout=30).json()  # fmt: skip
        if got.get("resultTable") and got["resultTable"]["rows"][0][0] == rows:
            return
        time.sleep(0.3)
    raise AssertionError(f"the broker never served all {rows} rows of {table}")


def ask(cluster, sql: str) -> dict:
    answer = requests.post(f"{cluster.broker_url}/query", json={"sql": sql}, timeout=60).json()
    assert answer["exceptions"] == [], (sql, answer["exceptions"])
    return answer


def reference(tables, sql: str) -> list[list]:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return [list(r) for r in con.execute(sql.format(hint="")).fetchall()]


def hash_rows_into_joins(node: dict) -> int:
    into_join = node["children"] if "HASH_JOIN" in node["operators"] else []
    own = sum(c["emittedRows"] for c in into_join if c.get("distribution") == "HASH")
    return own + sum(hash_rows_into_joins(c) for c in node["children"])


def distributions(node: dict) -> list[str]:
    own = [node["distribution"]] if "distribution" in node else []
    return own + [d for c in node["children"] for d in distributions(c)]


@pytest.mark.parametrize("sql", QUERIES)
def test_colocated_join_equals_duckdb_and_the_shuffled_plan(cluster, sql):
    cluster, tables = cluster
    answer = ask(cluster, sql.format(hint=""))
    expected = reference(tables, sql)
    assert same(answer["resultTable"]["rows"], expected)
    stats = answer["stageStats"]
    assert distributions(stats).count("PARTITIONED") == 2
    assert hash_rows_into_joins(stats) == 0  # nothing shuffled into the join
    shuffled = ask(cluster, sql.format(hint=SHUFFLE))
    assert same(shuffled["resultTable"]["rows"], expected)
    assert "PARTITIONED" not in distributions(shuffled["stageStats"])
    assert hash_rows_into_joins(shuffled["stageStats"]) > 0


def test_explain_shows_the_colocated_exchange(cluster):
    cluster, _ = cluster
    answer = ask(cluster, "EXPLAIN PLAN FOR " + QUERIES[0].format(hint=""))
    plan = answer["resultTable"]["rows"][0][1]
    assert plan.count("colocated=[true]") == 2, plan
    assert "PinotLogicalExchange(distribution=[hash[" in plan


def test_partitions_on_different_servers_fall_back_to_the_shuffle(cluster):
    cluster, tables = cluster
    sql = QUERIES[1].replace("customers", "customers_far")
    answer = ask(cluster, sql.format(hint=""))
    assert same(answer["resultTable"]["rows"], reference(tables, sql))
    assert "PARTITIONED" not in distributions(answer["stageStats"])
    plan = ask(cluster, "EXPLAIN PLAN FOR " + sql.format(hint=""))["resultTable"]["rows"][0][1]
    assert "colocated=[false: no server holds every segment of partition 1 of " \
        "customers_far and orders]" in plan  # fmt: skip


def test_stage_parallelism_answers_the_same(cluster):
    cluster, tables = cluster
    sql = "SET stageParallelism = 3; " + QUERIES[0]
    answer = ask(cluster, sql.format(hint=SHUFFLE))
    assert same(answer["resultTable"]["rows"], reference(tables, QUERIES[0]))

    def joins(node):
        mine = [node] if "HASH_JOIN" in node["operators"] else []
        return mine + [j for c in node["children"] for j in joins(c)]

    assert [j["parallelism"] for j in joins(answer["stageStats"])] == [6]
    bad = requests.post(f"{cluster.broker_url}/query",
                        json={"sql": "SET stageParallelism = 0; " + QUERIES[0].format(hint="")},
                        timeout=30).json()  # fmt: skip
    assert "stageParallelism" in bad["exceptions"][0]["message"]
