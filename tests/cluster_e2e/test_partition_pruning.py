"""Partition pruning never loses rows: for every partition function, a table whose segments
each hold one partition's keys answers point lookups and IN lists through the broker exactly as
a scan of the same rows in an unpartitioned table does, and the pruning really happens.

A real cluster (controller, one server, broker as processes on the real ZooKeeper); segments
are built with the engine's writer and uploaded through ``POST /segments``, so the partitions
in the segment metadata, the ``segment.partition.metadata`` the upload writes, the broker's
pruner and the server's pruner are all the product's own."""

from __future__ import annotations

import os
import random
import sys
from collections import defaultdict

import pyarrow as pa
import pytest

from engine.common.types import DataType
from engine.segment import build_segment, pack_segment
from engine.spi.partition import partition_function
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from tests.cluster_e2e.conftest import start_cluster, stop_cluster, upload_tar, wait_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's workers need our packages

SUBJECTS = ["Maths", "english", "CHEMISTRY", "physics", "Art"]
KEYS = list(range(-6, 52))  # 58 keys, as in the report, negatives included
ROWS = [
    {
        "k": k,
        "big": k * 3_000_000_007,
        "s": f"user-{k}",
        "subject": SUBJECTS[k % 5],
        "v": k * 10 + 1,
    }
    for k in KEYS
]
# (table, partition column, its type, columnPartitionMap entry without numPartitions)
CASES = [
    ("pMurmur", "s", DataType.STRING, {"functionName": "Murmur"}),
    ("pMurmur3", "k", DataType.INT, {"functionName": "Murmur3", "functionConfig": {"seed": "9001"}}),
    ("pMurmur3x64", "big", DataType.LONG,
     {"functionName": "murmur3", "functionConfig": {"seed": "-7", "variant": "x64_32"}}),
    ("pModulo", "k", DataType.INT, {"functionName": "Modulo"}),
    ("pHashCode", "s", DataType.STRING, {"functionName": "HASHCODE"}),
    ("pByteArray", "k", DataType.INT, {"functionName": "ByteArray"}),
    ("pBounded", "subject", DataType.STRING, {"functionName": "BoundedColumnValue", "functionConfig": {
        "columnValues": "Maths|English|Chemistry", "columnValuesDelimiter": "|"}}),
]  # fmt: skip
SCAN = "pScan"


def schema_json(name: str) -> dict:
    return {
        "schemaName": name,
        "dimensionFieldSpecs": [
            {"name": "k", "dataType": "INT"},
            {"name": "big", "dataType": "LONG"},
            {"name": "s", "dataType": "STRING"},
            {"name": "subject", "dataType": "STRING"},
        ],
        "metricFieldSpecs": [{"name": "v", "dataType": "INT"}],
    }


def table_json(name: str, column: str | None = None, spec: dict | None = None) -> dict:
    config = {
        "tableName": name,
        "tableType": "OFFLINE",
        "segmentsConfig": {"replication": "1", "schemaName": name},
        "tableIndexConfig": {},
        "tenants": {},
        "metadata": {},
    }
    if column is not None:
        partition = {column: {**spec, "numPartitions": 4}}
        config["tableIndexConfig"]["segmentPartitionConfig"] = {"columnPartitionMap": partition}
        config["routing"] = {"segmentPrunerTypes": ["partition"]}
    return config


def create_table(cluster, workdir, name: str, config: dict, segments: dict[str, list[dict]]):
    """Schema and table through the controller, then each segment built by the engine's writer
    and uploaded through ``POST /segments``."""
    schema = schema_json(name)
    for path, body in (("/schemas", schema), ("/tables", config)):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    for segment, rows in segments.items():
        built = build_segment(pa.Table.from_pylist(rows), Schema.from_json(schema),
                              TableConfig.from_json(config), workdir / "built",
                              segment_name=segment)  # fmt: skip
        upload_tar(cluster, name, pack_segment(built.path, workdir / f"{segment}.tar.gz"))


def by_partition(column: str, data_type: DataType, spec: dict) -> dict[str, list[dict]]:
    """The rows grouped into one segment per partition of ``column``."""
    function = partition_function(spec["functionName"], 4, spec.get("functionConfig"))
    groups = defaultdict(list)
    for row in ROWS:
        groups[function.partitions_of_values([row[column]], data_type)[0]].append(row)
    return {f"p{p}": rows for p, rows in sorted(groups.items())}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    """One controller, server and broker, with the unpartitioned table every case compares to."""
    workdir = tmp_path_factory.mktemp("partition-e2e")
    running = start_cluster(zookeeper.address, workdir, servers=1)
    try:
        create_table(running, workdir, SCAN, table_json(SCAN), {f"{SCAN}_all": ROWS})
        wait_rows(running, SCAN, len(ROWS))
        yield running, workdir
    finally:
        stop_cluster(running)


def literal(value) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def answer(cluster, table: str, where: str) -> list:
    response = cluster.query(f"SELECT COUNT(*), SUM(v) FROM {table} WHERE {where}")
    assert response["exceptions"] == [], response
    return response


@pytest.mark.parametrize(("table", "column", "data_type", "spec"), CASES, ids=[c[0] for c in CASES])
def test_point_lookups_and_in_lists_match_a_scan(cluster, table, column, data_type, spec):
    cluster, workdir = cluster
    segments = {f"{table}_{p}": rows for p, rows in by_partition(column, data_type, spec).items()}
    create_table(cluster, workdir, table, table_json(table, column, spec), segments)
    wait_rows(cluster, table, len(ROWS))
    values = sorted({row[column] for row in ROWS}, key=str)
    lookups = [f"{column} = {literal(v)}" for v in values]
    if column == "subject":  # BoundedColumnValue matches ignoring case; the filter does not
        lookups += [f"{column} = 'maths'", f"{column} = 'Nothing'"]
    rng = random.Random(42)
    lookups += [
        f"{column} IN ({', '.join(literal(v) for v in rng.sample(values, min(len(values), n)))})"
        for n in (2, 3, 5, 8)
        for _ in range(3)
    ]
    for where in lookups:
        got = answer(cluster, table, where)
        expected = answer(cluster, SCAN, where)
        assert got["resultTable"]["rows"] == expected["resultTable"]["rows"], where
    # and pruning happened: a point lookup on a multi-key partition queries one segment
    value = values[0]
    response = answer(cluster, table, f"{column} = {literal(value)}")
    assert response["resultTable"]["rows"][0][0] >= 1
    assert response["numSegmentsQueried"] == 1, response
    assert response["numSegmentsPrunedByBroker"] == len(segments) - 1, response


INGEST_SPEC = """
jobType: SegmentCreationAndTarPush
inputDirURI: '{input}'
includeFileNamePattern: 'glob:*.csv'
outputDirURI: '{output}'
overwriteOutput: true
recordReaderSpec:
  dataFormat: 'csv'
  className: 'org.apache.pinot.plugin.inputformat.csv.CSVRecordReader'
tableSpec:
  tableName: '{table}'
pinotClusterSpecs:
  - controllerURI: '{controller}'
"""


def test_the_reported_case_through_sprig_ingest(cluster, spark, tmp_path):
    """As reported: Murmur3 with seed 9001 on INT k, 4 partitions, 4 CSV files that each hold
    one partition's keys, loaded by the Spark ingestion job; every point lookup finds its row."""
    from spark_jobs.ingestion.main import main

    cluster, _ = cluster
    table, spec = "reported", CASES[1][3]
    for path, body in (("/schemas", schema_json(table)), ("/tables", table_json(table, "k", spec))):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name, rows in by_partition("k", DataType.INT, spec).items():
        lines = ["k,big,s,subject,v", *(",".join(str(r[c]) for c in
                 ("k", "big", "s", "subject", "v")) for r in rows)]  # fmt: skip
        (inputs / f"{name}.csv").write_text("\n".join(lines) + "\n")
    job = tmp_path / "job.yaml"
    job.write_text(INGEST_SPEC.format(input=inputs, output=tmp_path / "out", table=table,
                                      controller=cluster.controller_url))  # fmt: skip
    assert main(["--no-progress", "--spec", str(job)]) == 0
    wait_rows(cluster, table, len(ROWS))
    wrong = []
    for key in KEYS:
        response = cluster.query(f"SELECT COUNT(*) FROM {table} WHERE k = {key}")
        if response["resultTable"]["rows"] != [[1]] or response["numSegmentsQueried"] != 1:
            wrong.append((key, response["resultTable"]["rows"], response["numSegmentsQueried"]))
    assert wrong == []
