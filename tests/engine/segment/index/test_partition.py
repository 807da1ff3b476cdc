import mmh3
import pyarrow as pa

from engine.segment import build_segment, load_segment
from engine.segment.index.partition import java_string_hash, murmur2, partition_of
from engine.spi.table_config_model import ColumnPartitionConfig
from tests.engine.conftest import make_schema, make_table_config


def test_murmur2_matches_kafka_reference_values():
    # Kafka's Utils.murmur2 test vectors (Pinot's Murmur partition function uses the same hash).
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_partition_functions():
    murmur = ColumnPartitionConfig("Murmur", 5)
    assert partition_of(murmur, "foobar") == (-790332482 & 0x7FFFFFFF) % 5
    assert partition_of(murmur, 21) == (-973932308 & 0x7FFFFFFF) % 5  # numbers hash as text
    assert partition_of(ColumnPartitionConfig("Modulo", 4), -7) == 1  # non-negative, like Pinot
    assert partition_of(ColumnPartitionConfig("Modulo", 4), "10") == 2
    assert java_string_hash("hello") == 99162322
    assert partition_of(ColumnPartitionConfig("HashCode", 7), "hello") == 99162322 % 7
    murmur3 = ColumnPartitionConfig("Murmur3", 8)
    assert partition_of(murmur3, "k") == (mmh3.hash(b"k", 9001, signed=True) & 0x7FFFFFFF) % 8


def test_segment_metadata_lists_partitions(tmp_path):
    schema = make_schema(
        dimensions=[{"name": "member", "dataType": "INT"}, {"name": "key", "dataType": "STRING"}]
    )
    config = make_table_config(
        schema,
        tableIndexConfig={
            "segmentPartitionConfig": {
                "columnPartitionMap": {
                    "member": {"functionName": "Modulo", "numPartitions": 4},
                    "key": {"functionName": "Murmur", "numPartitions": 3},
                }
            }
        },
    )
    table = pa.table({"member": [1, 5, 9, 3], "key": ["foobar", "21", "foobar", "abc"]})
    meta = (
        load_segment(build_segment(table, schema, config, tmp_path).path).column("member").metadata
    )
    assert (meta.partition_function, meta.num_partitions, meta.partitions) == ("Modulo", 4, [1, 3])
    key = load_segment(tmp_path / "t_0").column("key").metadata
    expected = sorted(
        {partition_of(ColumnPartitionConfig("Murmur", 3), v) for v in ["foobar", "21", "abc"]}
    )
    assert key.partitions == expected
