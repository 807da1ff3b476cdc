"""The null-handling conformance suite through a real broker: the generated table with NULLs in
every data type (``tests/engine/query/null_conformance.py``) on a controller, two servers and
a broker as processes, its segments (sorted, inverted and range indexes) spread over both
servers, every query of ``null_queries`` with ``enableNullHandling`` on and off against
DuckDB. Group keys, NULL marks and the states of aggregations that finalize to NULL cross
the wire and are merged at the broker."""

from __future__ import annotations

import pytest

from engine.segment import build_segment, pack_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from tests.cluster_e2e.conftest import start_cluster, stop_cluster, upload_tar, wait_rows
from tests.engine.query import null_conformance as nc
from tests.engine.query.null_queries import all_queries

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def null_cluster(zookeeper, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("e2e-nulls")
    cluster = start_cluster(zookeeper.address, workdir, servers=2)
    try:
        config = nc.table_config("indexed")
        for path, body in (("/schemas", nc.SCHEMA), ("/tables", config)):
            response = cluster.controller("POST", path, json=body)
            assert response.ok, f"POST {path}: {response.status_code} {response.text}"
        rows = nc.generate_rows()
        schema, table_config = Schema.from_json(nc.SCHEMA), TableConfig.from_json(config)
        for n, (start, stop) in enumerate(nc.segment_ranges()):
            built = build_segment(nc.arrow_rows(rows, start, stop), schema, table_config,
                                  workdir / "built", segment_name=f"{nc.TABLE}_{n}")  # fmt: skip
            upload_tar(cluster, nc.TABLE, pack_segment(built.path, workdir / f"s{n}.tar.gz"))
        wait_rows(cluster, nc.TABLE, sum(nc.SEGMENT_SIZES))
        yield cluster, rows
    finally:
        stop_cluster(cluster)


def test_null_handling_through_the_broker_matches_duckdb(null_cluster):
    cluster, rows = null_cluster
    spread = cluster.query(f"SELECT COUNT(*) FROM {nc.TABLE}", enableNullHandling="true")
    assert spread["numServersQueried"] == 2 == spread["numServersResponded"]

    def execute(sql: str, null_handling: bool) -> dict:
        return cluster.query(sql, enableNullHandling="true" if null_handling else "false")

    checks = nc.run_suite(execute, nc.TABLE, nc.Reference(rows), all_queries())
    assert len(checks) > 800
    assert all(c.ok for c in checks), nc.failures(checks)
