"""Replica-group assignment and routing on a real cluster (controller, four servers, broker):
Pinot's colocated example tables, with segments per Murmur partition of userUUID. Every
segment has one replica in each replica group, on its partition's server; each query runs
on the servers of one replica group only, and its answers match the data."""

from __future__ import annotations

import random

import orjson
import pyarrow as pa
import pytest

from engine.common.types import DataType
from engine.spi.partition import partition_function
from tests.cluster_e2e.conftest import start_cluster, stop_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("userAttributes", "userFactEvents")  # userFactEvents shares userAttributes' groups
PARTITIONS = {"userAttributes": 4, "userFactEvents": 8}  # from their segmentPartitionConfig


def _config(pinot_examples, table: str, kind: str) -> dict:
    folder = pinot_examples / "all-configs" / "batch" / "colocated" / table
    return orjson.loads((folder / f"{table}_{kind}.json").read_bytes())


def _rows(table: str, users: list[str], rng: random.Random) -> list[dict]:
    if table == "userAttributes":
        return [{"deviceOS": rng.choice(["ios", "android"]), "userUUID": u,
                 "daysSinceFirstTrip": rng.randint(0, 900), "totalTrips": rng.randint(1, 50)}
                for u in users]  # fmt: skip
    return [{"deviceOS": rng.choice(["ios", "android"]), "userUUID": rng.choice(users),
             "tripCurrencyCode": "USD", "cityName": rng.choice(["SF", "NYC", "LA"]),
             "productCode": "X", "tripAmount": float(rng.randint(5, 80)),
             "distanceMeters": float(rng.randint(100, 9000)), "ts": 1_700_000_000_000 + i}
            for i in range(600)]  # fmt: skip


@pytest.fixture(scope="module")
def colocated(zookeeper, pinot_examples, tmp_path_factory):
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    workdir = tmp_path_factory.mktemp("replica-groups")
    cluster = start_cluster(zookeeper.address, workdir, servers=4)
    rng = random.Random(7)
    users = [f"user-{i:04d}" for i in range(300)]
    data: dict[str, list[dict]] = {}
    try:
        for table in TABLES:
            schema, config = _config(pinot_examples, table, "schema"), _config(
                pinot_examples, table, "offline_table_config")  # fmt: skip
            for path, body in (("/schemas", schema), ("/tables", config)):
                response = cluster.controller("POST", path, json=body)
                assert response.ok, f"POST {path} {table}: {response.text}"
            rows = data[table] = _rows(table, users, rng)
            murmur = partition_function("Murmur", PARTITIONS[table])
            parsed_schema = Schema.from_json(schema)
            parsed_config = TableConfig.from_json(config, schema=parsed_schema)
            for p in range(PARTITIONS[table]):
                part = [r for r in rows if murmur.partitions_of_values([r["userUUID"]],
                                                                       DataType.STRING) == [p]]  # fmt: skip
                built = build_segment(pa.Table.from_pylist(part), parsed_schema, parsed_config,
                                      workdir / "built", segment_name=f"{table}_p{p}")  # fmt: skip
                tar = pack_segment(built.path, workdir / f"{built.name}.tar.gz")
                with tar.open("rb") as handle:
                    response = cluster.controller(
                        "POST", "/segments", params={"tableName": table, "tableType": "OFFLINE"},
                        files={"file": (tar.name, handle, "application/gzip")},
                    )  # fmt: skip
                assert response.ok, response.text
        yield cluster, data
    finally:
        stop_cluster(cluster)


def _groups(cluster) -> dict[str, int]:
    servers = sorted(cluster.servers)  # replica groups: runs of 2 sorted server ids
    return {server: i // 2 for i, server in enumerate(servers)}


def test_segments_have_one_replica_per_group_on_their_partition(colocated):
    cluster, _ = colocated
    groups = _groups(cluster)
    path = f"/{cluster.env['SPRIG_CLUSTER_NAME']}/PROPERTYSTORE/INSTANCE_PARTITIONS"
    partitions = cluster.controller(
        "GET", "/zk/get", params={"path": f"{path}/userAttributes_OFFLINE"}
    ).json()
    lists = partitions["listFields"]
    assert sorted(lists) == ["0_0", "0_1", "1_0", "1_1"]
    for table in TABLES:
        ideal = cluster.controller("GET", f"/tables/{table}/idealstate").json()["OFFLINE"]
        assert len(ideal) == PARTITIONS[table]
        for segment, replicas in ideal.items():
            p = int(segment.rsplit("_p", 1)[1]) % 2  # the instance partition of its data
            assert sorted(groups[s] for s in replicas) == [0, 1], (segment, replicas)
            assert sorted(replicas) == sorted(lists[f"{p}_0"] + lists[f"{p}_1"])


def _wait_served(cluster, table: str, rows: int) -> None:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = cluster.query(f"SELECT COUNT(*) FROM {table}")
        if not got["exceptions"] and got["resultTable"]["rows"][0][0] == rows:
            return
        time.sleep(0.3)
    raise AssertionError(f"{table} not served: {got}")


def test_each_query_runs_on_one_replica_group_with_unchanged_answers(colocated):
    cluster, data = colocated
    groups = _groups(cluster)
    trips = data["userFactEvents"]
    _wait_served(cluster, "userAttributes", len(data["userAttributes"]))
    _wait_served(cluster, "userFactEvents", len(trips))
    expected = {}
    for r in trips:
        expected[r["cityName"]] = expected.get(r["cityName"], 0.0) + r["tripAmount"]
    used = set()
    for _ in range(6):
        body = {"sql": "SELECT cityName, SUM(tripAmount) FROM userFactEvents GROUP BY cityName "
                       "ORDER BY cityName", "trace": True}  # fmt: skip
        response = orjson.loads(cluster_post(cluster, body))
        assert response["exceptions"] == []
        assert {row[0]: row[1] for row in response["resultTable"]["rows"]} == pytest.approx(
            expected
        )
        servers = set(response["traceInfo"])
        assert len({groups[s] for s in servers}) == 1, servers
        assert len(servers) == 2  # both partitions' servers of that group
        used |= {groups[s] for s in servers}
    assert used == {0, 1}  # consecutive queries alternate between the groups


def cluster_post(cluster, body: dict) -> bytes:
    import requests

    response = requests.post(f"{cluster.broker_url}/query/sql", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.content
