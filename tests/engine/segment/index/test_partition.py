"""The segment writer records, per partitioned column, the function, its config and the
partitions of the column's values, computed by ``engine.spi.partition``."""

import pyarrow as pa
import pytest

from engine.common.errors import SegmentError
from engine.common.types import DataType
from engine.segment import build_segment, load_segment
from engine.spi.partition import partition_function
from tests.engine.conftest import make_schema, make_table_config

PARTITIONING = {
    "member": {"functionName": "modulo", "numPartitions": 4},
    "key": {"functionName": "Murmur3", "numPartitions": 3, "functionConfig": {"seed": 9001}},
}


def build(tmp_path, table: pa.Table, partitioning=PARTITIONING):
    schema = make_schema(
        dimensions=[
            {"name": "member", "dataType": "INT"},
            {"name": "key", "dataType": "STRING"},
        ]
    )
    config = make_table_config(
        schema,
        tableIndexConfig={"segmentPartitionConfig": {"columnPartitionMap": partitioning}},
    )
    return build_segment(table, schema, config, tmp_path)


def test_segment_metadata_records_function_config_and_partitions(tmp_path):
    table = pa.table(
        {
            "member": [1, 5, 9, -3],
            "key": ["foobar", "21", "foobar", "abc"],
        }
    )
    path = build(tmp_path, table).path
    member = load_segment(path).column("member").metadata
    assert (member.partition_function, member.num_partitions) == ("Modulo", 4)
    assert member.partitions == [1] and member.partition_function_config == {}
    key = load_segment(path).column("key").metadata
    murmur3 = partition_function("Murmur3", 3, {"seed": "9001"})
    assert key.partition_function_config == {"seed": "9001"}  # as Pinot's Map<String, String>
    assert key.partitions == murmur3.partitions_of_values(["foobar", "21", "abc"], DataType.STRING)
    props = load_segment(path).metadata.to_pinot_properties()
    assert props["column.key.partitionFunction"] == "Murmur3"
    assert props["column.key.partitionFunctionConfig.seed"] == "9001"


def test_modulo_of_a_non_integer_fails_the_segment_naming_the_column(tmp_path):
    table = pa.table({"member": [1], "key": ["not-a-number"]})
    partitioning = {"key": {"functionName": "Modulo", "numPartitions": 4}}
    with pytest.raises(SegmentError, match=r"column 'key'.*Modulo.*'not-a-number'"):
        build(tmp_path, table, partitioning)
