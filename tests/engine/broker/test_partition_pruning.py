"""The broker's partition pruning with ``engine.spi.partition``: functionConfig honoured, the
function recorded in each segment's metadata preferred to the table's, and nothing pruned
when the partition of a literal cannot be known."""

from __future__ import annotations

import orjson

from engine.broker.pruning import (
    ColumnPartitioning,
    SegmentInfo,
    prune,
    recorded_partitions,
    table_partitioning,
)
from engine.common.types import DataType
from engine.spi.partition import partition_function
from tests.engine.broker.test_pruning import where
from tests.engine.conftest import make_schema

SCHEMA = make_schema(dimensions=[{"name": "k", "dataType": "INT"}])
SEEDED = {"functionName": "Murmur3", "numPartitions": 4, "functionConfig": {"seed": "9001"}}


def metadata(**columns) -> str:
    return orjson.dumps({"columnPartitionMap": columns}).decode()


def segments_by_partition(function, keys=range(-6, 52)):
    groups: dict[int, set] = {}
    for key in keys:
        groups.setdefault(function.partition(str(key)), set()).add(key)
    infos = []
    for p in sorted(groups):
        spec = {**function.to_json(), "partitions": [p]}
        partitions, functions = recorded_partitions(metadata(k=spec))
        infos.append(SegmentInfo(f"p{p}", None, None, partitions, functions))
    return groups, infos


def kept(segments, sql_filter, partitioning):
    got = prune(segments, where(sql_filter), time_column=None, time_unit_ms=None,
                partitioning=partitioning)  # fmt: skip
    return [s.name for s in got]


def test_murmur3_seed_from_function_config_keeps_the_right_segment():
    # the reported bug: the broker hashed with seed 0 and pruned the segment holding the key
    function = partition_function("Murmur3", 4, {"seed": "9001"})
    groups, segments = segments_by_partition(function)
    partitioning = table_partitioning({"k": SEEDED}, SCHEMA)
    assert partitioning["k"] == ColumnPartitioning("Murmur3", 4, {"seed": "9001"}, DataType.INT)
    for p, keys in groups.items():
        for key in keys:
            assert kept(segments, f"k = {key}", partitioning) == [f"p{p}"]
    # the table-level function (no recorded one) gives the same answer
    bare = [SegmentInfo(s.name, None, None, s.partitions) for s in segments]
    assert kept(bare, "k = -1", partitioning) == kept(segments, "k = -1", partitioning)


def test_the_recorded_function_wins_over_a_changed_table_config():
    old = partition_function("Modulo", 2)
    partitions, functions = recorded_partitions(metadata(k={**old.to_json(), "partitions": [1]}))
    segment = SegmentInfo("old", None, None, partitions, functions)
    now = table_partitioning({"k": {"functionName": "Modulo", "numPartitions": 8}}, SCHEMA)
    assert kept([segment], "k = 3", now) == ["old"]  # 3 % 2 == 1, though 3 % 8 == 3
    assert kept([segment], "k = 4", now) == []


def test_murmur3_metadata_without_function_config_never_prunes():
    # written before the seed was recorded: its partitions may use another seed
    legacy = {"functionName": "Murmur3", "numPartitions": 4, "partitions": [0]}
    for spec in (legacy, {**legacy, "functionConfig": None}):
        partitions, functions = recorded_partitions(metadata(k=spec))
        assert functions == {"k": None}
        segment = SegmentInfo("legacy", None, None, partitions, functions)
        partitioning = table_partitioning({"k": SEEDED}, SCHEMA)
        assert [kept([segment], f"k = {key}", partitioning) for key in range(8)] == [["legacy"]] * 8


def test_hash_functions_need_the_column_type_modulo_does_not():
    untyped = {"k": ColumnPartitioning("Murmur", 4)}
    murmur = partition_function("Murmur", 4)
    segment = SegmentInfo("s", partitions={"k": frozenset({murmur.partition("7")})})
    assert kept([segment], "k = 8", untyped) == ["s"]  # an INT 8 and a DOUBLE 8.0 hash apart
    modulo = SegmentInfo("m", partitions={"k": frozenset({1})})
    assert kept([modulo], "k = 6", {"k": ColumnPartitioning("Modulo", 4)}) == []
    assert kept([modulo], "k = 5", {"k": ColumnPartitioning("Modulo", 4)}) == ["m"]


def test_unreadable_partition_metadata_keeps_the_segment():
    assert recorded_partitions("{not json", "s1") == ({}, {})
    assert recorded_partitions(None) == ({}, {})
    partitions, functions = recorded_partitions(
        metadata(k={"functionName": "NoSuch", "numPartitions": 4, "partitions": [0]})
    )
    segment = SegmentInfo("s", None, None, partitions, functions)
    assert kept([segment], "k = 1", table_partitioning({"k": SEEDED}, SCHEMA)) == ["s"]
