"""SSB's 13 queries (Pinot's set) through the broker and two servers give DuckDB's answers
on the same seeded data (scale factor 0.01: 60,000 lineorder rows in 3 segments)."""

from __future__ import annotations

import duckdb
import pytest
import requests

from bench import ssb
from bench.multistage import load, same, wait_loaded

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def ssb_cluster(zookeeper, tmp_path_factory):
    from tests.cluster_e2e.conftest import start_cluster, stop_cluster

    workdir = tmp_path_factory.mktemp("ssb")
    cluster = start_cluster(zookeeper.address, workdir)
    try:
        tables = ssb.generate(0.01)
        load(cluster.controller_url, workdir, tables, 3)
        wait_loaded(cluster.broker_url, tables["lineorder"].num_rows)
        yield cluster, tables
    finally:
        stop_cluster(cluster)


def test_ssb_answers_equal_duckdb(ssb_cluster):
    cluster, tables = ssb_cluster
    duck = duckdb.connect()
    for name, table in tables.items():
        duck.register(name, table)
    answered = 0
    for sql in ssb.queries():
        answer = requests.post(f"{cluster.broker_url}/query", json={"sql": sql}, timeout=60).json()
        assert answer["exceptions"] == [], (sql, answer["exceptions"])
        expected = [list(r) for r in duck.execute(sql).fetchall()]
        answered += bool(expected)
        assert same(answer["resultTable"]["rows"], expected), sql
        assert answer["queryEngine"] == "MULTI_STAGE"
    assert answered >= 11  # at this scale Q3.4 (one month, two cities) may find no rows
