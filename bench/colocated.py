"""Two tables partitioned alike on their join key, for the colocated join (benchmark and tests).

``orders`` (``cust``, ``amount``) and ``customers`` (``cust``, ``credit``) are partitioned on
``cust`` by Murmur into 4 partitions (``segmentPartitionConfig``), and placed by
replica-group instance assignment with 2 instance partitions over the 2 servers
(``replicaGroupPartitionConfig``, as in Pinot's ``colocated`` example configs): partitions 0
and 2 of both tables on the first server, 1 and 3 on the second. A table made with
``spread=False`` keeps every partition on the first server, so a join with it cannot be
colocated. Each segment holds one partition, as a partitioned batch job writes them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.upload import create_table, upload_segment
from engine.common.types import DataType
from engine.spi.partition import partition_function

KEY = "cust"
NUM_PARTITIONS = 4
FUNCTION = partition_function("Murmur", NUM_PARTITIONS)


def generate(num_orders: int, num_customers: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    customers = pa.table({KEY: pa.array(np.arange(num_customers, dtype=np.int32)),
                          "credit": pa.array(rng.integers(0, 1000, num_customers))})  # fmt: skip
    orders = pa.table({
        KEY: pa.array(rng.integers(0, num_customers + num_customers // 10, num_orders,
                                   dtype=np.int32)),  # a tenth match no customer
        "amount": pa.array(rng.integers(1, 500, num_orders)),
    })  # fmt: skip
    return {"orders": orders, "customers": customers}


def schema_json(name: str, table: pa.Table) -> dict:
    value = next(c for c in table.column_names if c != KEY)
    return {"schemaName": name, "dimensionFieldSpecs": [{"name": KEY, "dataType": "INT"}],
            "metricFieldSpecs": [{"name": value, "dataType": "LONG"}]}  # fmt: skip


def table_config_json(name: str, *, spread: bool = True) -> dict:
    servers = 2 if spread else 1
    return {
        "tableName": name, "tableType": "OFFLINE",
        "segmentsConfig": {"replication": "1"},
        "tableIndexConfig": {"segmentPartitionConfig": {"columnPartitionMap": {
            KEY: {"functionName": FUNCTION.name, "numPartitions": NUM_PARTITIONS}}}},
        "instanceAssignmentConfigMap": {"OFFLINE": {"replicaGroupPartitionConfig": {
            "replicaGroupBased": True, "numReplicaGroups": 1,
            "numInstancesPerReplicaGroup": servers, "numPartitions": servers,
            "numInstancesPerPartition": 1, "partitionColumn": KEY}}},
        "routing": {"instanceSelectorType": "multiStageReplicaGroup"},
        "tenants": {}, "metadata": {},
    }  # fmt: skip


def by_partition(table: pa.Table) -> list[pa.Table]:
    """``table``'s rows of each partition of ``KEY`` (the partition function's own home)."""
    keys = table.column(KEY).to_numpy()
    distinct = np.unique(keys)
    of_key = np.array([FUNCTION.partitions_of_values([int(k)], DataType.INT)[0]
                       for k in distinct])  # fmt: skip
    ids = of_key[np.searchsorted(distinct, keys)]
    return [table.filter(pa.array(ids == p)) for p in range(NUM_PARTITIONS)]


def load(controller: str, workdir: Path, name: str, table: pa.Table, *, spread: bool = True,
         segments_per_partition: int = 1) -> None:  # fmt: skip
    """Create ``name`` and upload its rows as segments of one partition each."""
    schema, config = create_table(controller, name, schema_json(name, table),
                                  table_config_json(name, spread=spread))  # fmt: skip
    for p, part in enumerate(by_partition(table)):
        size = -(-part.num_rows // segments_per_partition)
        for i in range(segments_per_partition):
            piece = part.slice(i * size, size)
            if piece.num_rows:
                upload_segment(controller, workdir, piece, schema, config, f"{name}_p{p}_{i}")
