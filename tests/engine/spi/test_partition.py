"""Pinot's partition functions (``engine.spi.partition``): known answers taken from Pinot's and
Kafka's own test vectors and from real Java (String.hashCode, Guava, Double.toString), the
config rules, and the property that matters most: the partition the segment writer records
is the one the server's and the broker's pruners compute, so pruning never loses a row."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.broker.pruning import SegmentInfo, prune, recorded_partitions, table_partitioning
from engine.common.errors import ConfigError
from engine.common.types import DataType
from engine.query.pruning import prune_reason
from engine.query.segment_view import SegmentView
from engine.segment import build_segment, load_segment
from engine.spi.partition import (
    FUNCTION_NAMES,
    canonical_name,
    literal_text,
    partition_function,
    recorded_function,
)
from engine.spi.partition_hashes import (
    java_bytes_hash,
    java_double_text,
    java_float_text,
    java_string_hash,
    murmur2,
    murmur3_x64_32,
    murmur3_x86_32,
    value_text,
)
from tests.engine.broker.test_pruning import where
from tests.engine.conftest import make_schema, make_table_config


class JavaRandom:
    """java.util.Random (a 48-bit LCG), to regenerate the inputs of Pinot's test vectors."""

    def __init__(self, seed: int):
        self.state = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)

    def next_int(self) -> int:
        self.state = (self.state * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
        return self.state >> 16

    def next_bytes(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            rnd = self.next_int()
            for _ in range(min(n - len(out), 4)):
                out.append(rnd & 0xFF)
                rnd >>= 8
        return bytes(out)


def pinot_inputs() -> list[bytes]:
    """The ten 7-byte arrays of Pinot's PartitionFunctionTest: Random(100).nextBytes."""
    random = JavaRandom(100)
    return [random.next_bytes(7) for _ in range(10)]


# Pinot's PartitionFunctionTest expectations for those inputs
PINOT_HASHES = {
    "murmur2": [-1044832774, -594851693, 1441878663, 1766739604, 1034724141, -296671913,
                443511156, 1483601453, 1819695080, -931669296],
    ("x64", 0): [-1569442405, -921191038, 16439113, -881572510, 2111401876, 655879980,
                 1409856380, -1348364123, -1770645361, 1277101955],
    ("x64", 9001): [698083240, 174075836, -938825597, 155806634, -831733828, 319389887,
                    -939822329, -1785781936, -1796939240, 757512622],
    ("x86", 0): [1255034832, -395463542, 659973067, 1070436837, -1193041642, -1412829846,
                 -483463488, -1385092001, 568671606, -807299446],
    ("x86", 9001): [-590969347, -315366997, 1642137565, -1732240651, -597560989, -1430018124,
                    -448506674, 410998174, -1912106487, -19253806],
}  # fmt: skip


def test_hashes_match_pinot_test_vectors():
    inputs = pinot_inputs()
    assert [murmur2(b) for b in inputs] == PINOT_HASHES["murmur2"]
    for (variant, seed), expected in [(k, v) for k, v in PINOT_HASHES.items() if k != "murmur2"]:
        hash_fn = murmur3_x64_32 if variant == "x64" else murmur3_x86_32
        assert [hash_fn(b, seed) for b in inputs] == expected, (variant, seed)


@pytest.mark.parametrize(
    ("name", "config", "expected"),
    [
        ("Murmur", None, [1, 4, 4, 1, 1, 2, 0, 4, 2, 3]),
        ("Murmur3", {"variant": "x64_32"}, [4, 1, 3, 2, 0, 3, 3, 2, 0, 1]),
        ("Murmur3", {"variant": "x64_32", "seed": "9001"}, [2, 1, 4, 2, 2, 2, 2, 1, 3, 3]),
        ("Murmur3", None, [4, 3, 3, 2, 3, 4, 0, 3, 1, 4]),
        ("Murmur3", {"seed": 9001}, [2, 1, 3, 2, 2, 1, 1, 4, 4, 2]),
        ("ByteArray", None, [1, 3, 2, 0, 0, 4, 4, 1, 2, 4]),
    ],
)
def test_partitions_of_strings_match_pinot_test_vectors(name, config, expected):
    # Pinot decodes each array as UTF-8 (malformed bytes become U+FFFD) and partitions the string
    function = partition_function(name, 5, config)
    assert [function.partition(b.decode("utf-8", "replace")) for b in pinot_inputs()] == expected


def test_murmur2_matches_kafka_test_vectors():
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert murmur2(b"") == 275646681


# text -> (String.hashCode, Arrays.hashCode(UTF-8), Guava murmur3_32_fixed seeds 0, 9001, -7),
# printed by a Java 17 program against the Guava jar that pyspark ships
JAVA_ANSWERS = {
    "": (0, 1, 0, -537374393, 214441827),
    "a": (97, 128, 1009084850, 179038849, -772364727),
    "hello": (99162322, 127791473, 613153351, 1461802374, 400642254),
    "Maths": (74115659, 102744810, 1876383075, -1652921683, -1798972347),
    "a-little-bit-long-string": (-865776169, 1351981784, -272574337, -613984488, 2125758079),
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8":
        (-305440039, -313199398, 1764318180, 326186655, -420752883),
    "\u00e9t\u00e9 \u65e5\u672c \U0001f600": (727386426, -424768568, 21111274, -1660508032, -1990900760),
    "-2147483648": (381796378, 510879097, -37542579, 765777622, 1474305138),
    "9001": (1745752, 2669273, -715462299, -1693058872, -1727010241),
    "polygenelubricants": (-2147483648, 1303011777, -1045881248, -853840073, -1331038981),
}  # fmt: skip


@pytest.mark.parametrize("text", list(JAVA_ANSWERS))
def test_java_hashes_match_java(text):
    string_hash, bytes_hash, *murmur3 = JAVA_ANSWERS[text]
    data = text.encode()
    assert java_string_hash(text) == string_hash
    assert java_bytes_hash(data) == bytes_hash
    assert [murmur3_x86_32(data, seed) for seed in (0, 9001, -7)] == murmur3


def test_hash_code_and_byte_array_use_kafkas_abs():
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: Kafka's abs makes it 0
    assert partition_function("HashCode", 7).partition("polygenelubricants") == 0
    assert partition_function("HashCode", 7).partition("hello") == 99162322 % 7
    assert partition_function("ByteArray", 7).partition("Maths") == 102744810 % 7
    assert partition_function("Murmur", 8).partition("21") == (-973932308 & 0x7FFFFFFF) % 8


@pytest.mark.parametrize(
    ("value", "double", "single"),
    [
        (0.0, "0.0", "0.0"), (-0.0, "-0.0", "-0.0"), (1.0, "1.0", "1.0"), (0.1, "0.1", "0.1"),
        (1e7, "1.0E7", "1.0E7"), (9999999.0, "9999999.0", "9999999.0"), (1e-3, "0.001", "0.001"),
        (9.99e-4, "9.99E-4", "9.99E-4"), (123.456, "123.456", "123.456"),
        (1e22, "1.0E22", "1.0E22"), (1.5e-5, "1.5E-5", "1.5E-5"), (-2.5, "-2.5", "-2.5"),
        (1e300, "1.0E300", "Infinity"), (5e-324, "4.9E-324", "0.0"), (100.0, "100.0", "100.0"),
        (float("nan"), "NaN", "NaN"), (float("-inf"), "-Infinity", "-Infinity"),
    ],
)  # fmt: skip
def test_floating_point_text_matches_javas_to_string(value, double, single):
    assert java_double_text(value) == double
    assert java_float_text(value) == single


def test_value_text_is_what_pinots_writer_hashes():
    assert value_text(-7, DataType.INT) == "-7"
    assert value_text(1, DataType.BOOLEAN) == "1"  # BOOLEAN is stored as INT
    assert value_text(1700000000000, DataType.TIMESTAMP) == "1700000000000"
    assert value_text(2.0, DataType.DOUBLE) == "2.0"
    assert value_text(b"\x01\xab", DataType.BYTES) == "01ab"
    import decimal

    assert value_text(decimal.Decimal("1.500000000000000000"), DataType.BIG_DECIMAL) == "1.5"
    assert value_text(decimal.Decimal("1E+2"), DataType.BIG_DECIMAL) == "100"


def test_literal_text_converts_filter_literals_like_the_engine():
    assert literal_text("5", DataType.INT) == "5"
    assert literal_text(5.0, DataType.LONG) == "5"
    assert literal_text(5.5, DataType.INT) is None  # equals no stored integer
    assert literal_text("true", DataType.BOOLEAN) == "1"
    assert literal_text(5, DataType.DOUBLE) == "5.0"
    assert literal_text("ABCD", DataType.BYTES) == "abcd"
    assert literal_text("zz", DataType.BYTES) is None
    assert literal_text(5, DataType.STRING) is None  # the engine's comparison is not text equality
    assert literal_text("5", None) is None


def test_names_match_case_insensitively():
    assert FUNCTION_NAMES == ("Modulo", "Murmur", "Murmur3", "HashCode", "ByteArray",
                              "BoundedColumnValue")  # fmt: skip
    assert canonical_name("mUrMuR3") == "Murmur3"
    assert canonical_name("murmur2") == "Murmur"  # Pinot's alias
    assert canonical_name("Fnv") is None
    assert partition_function("BOUNDEDcolumnVALUE", 3, {"columnValues": "a|b",
                              "columnValuesDelimiter": "|"}).name == "BoundedColumnValue"  # fmt: skip


def test_murmur3_defaults_are_pinots():
    default = partition_function("Murmur3", 16)
    explicit = partition_function("Murmur3", 16, {"seed": "0", "variant": "x86_32"})
    empty = partition_function("Murmur3", 16, {"seed": "", "variant": ""})
    for text in ("a", "hello", "-2147483648"):
        assert default.partition(text) == explicit.partition(text) == empty.partition(text)
        assert default.partition(text) == (murmur3_x86_32(text.encode(), 0) & 0x7FFFFFFF) % 16


def test_modulo_is_non_negative_and_takes_java_longs():
    modulo = partition_function("Modulo", 4)
    assert [modulo.partition(t) for t in ("10", "-7", "+3", "-9223372036854775808")] == [2, 1, 3, 0]
    for bad in ("7.0", "abc", " 7", "9223372036854775808", ""):
        with pytest.raises(ValueError, match="Modulo partitioning needs integer values"):
            modulo.partition(bad)


def test_bounded_column_value_matches_ignoring_case():
    config = {"columnValues": "Maths|english|Chemistry", "columnValuesDelimiter": "|"}
    bounded = partition_function("BoundedColumnValue", 4, config)
    assert [bounded.partition(t) for t in ("maths", "English", "Chemistry", "Physics")] == [
        1, 2, 3, 0
    ]  # fmt: skip
    # commons-lang split: any delimiter character, no empty tokens
    split = partition_function("BoundedColumnValue", 4, {"columnValues": "|a||b,c|",
                               "columnValuesDelimiter": "|,"})  # fmt: skip
    assert split.values == ["a", "b", "c"]
    odd_case = partition_function("BoundedColumnValue", 3, {"columnValues": "\u0130|K",
                                  "columnValuesDelimiter": "|"})  # fmt: skip
    # Java: "İ".equalsIgnoreCase("i") and "K".equalsIgnoreCase("\u212a") are true
    assert [odd_case.partition(t) for t in ("i", "\u212a", "ß")] == [1, 2, 0]


@pytest.mark.parametrize(
    ("name", "num", "config", "field", "message"),
    [
        ("Fnv", 4, None, "p.functionName", "unknown partition function 'Fnv'"),
        ("Murmur", 0, None, "p.numPartitions", "positive integer"),
        ("Murmur3", 4, {"seed": "x"}, "p.functionConfig.seed", "32-bit integer"),
        ("Murmur3", 4, {"seed": "2147483648"}, "p.functionConfig.seed", "32-bit integer"),
        ("Murmur3", 4, {"variant": "x64_128"}, "p.functionConfig.variant", "x86_32 or x64_32"),
        ("Murmur3", 4, {"seed": 1.5}, "p.functionConfig.seed", "expected a string"),
        ("BoundedColumnValue", 4, None, "p.functionConfig", "needs columnValues"),
        ("BoundedColumnValue", 4, {"columnValues": "a|b"}, "p.functionConfig.columnValuesDelimiter",
         "must be configured"),
        ("BoundedColumnValue", 4, {"columnValues": "a|b", "columnValuesDelimiter": "|"},
         "p.numPartitions", "one more than the 2 column values"),
    ],
)  # fmt: skip
def test_bad_configs_name_the_key(name, num, config, field, message):
    with pytest.raises(ConfigError, match=message) as err:
        partition_function(name, num, config, path="p.")
    assert err.value.field == field


def test_murmur3_metadata_without_a_config_is_not_trusted():
    assert recorded_function("Murmur3", 4, None) is None  # written before seeds were recorded
    assert recorded_function("Murmur3", 4, {}) == partition_function("Murmur3", 4)
    assert recorded_function("Murmur", 4, None) == partition_function("Murmur", 4)
    assert recorded_function("NoSuch", 4, {}) is None
    assert recorded_function("Murmur", "x", {}) is None


# ---- the writer and both pruners agree ----------------------------------------------------
WORDS = ["Maths", "English", "Chemistry", "Art", "x"]


def _cased(word: str, flips: list[bool]) -> str:
    return "".join(c.upper() if f else c.lower() for c, f in zip(word, flips, strict=True))


@st.composite
def cases(draw):
    """(data type, distinct values in the segment, probe values, columnPartitionMap entry)."""
    data_type = draw(
        st.sampled_from(
            [
                DataType.INT,
                DataType.LONG,
                DataType.STRING,
                DataType.BYTES,
                DataType.DOUBLE,
                DataType.BOOLEAN,
            ]
        )
    )
    if data_type is DataType.INT:
        values = st.integers(-(2**31) + 1, 2**31 - 1)  # INT_MIN is the null placeholder
    elif data_type is DataType.LONG:
        values = st.integers(-(2**63) + 1, 2**63 - 1)
    elif data_type is DataType.STRING:
        alphabet = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\\")
        values = st.one_of(st.text(alphabet, max_size=10).filter(lambda s: s.strip() == s and s),
                           st.sampled_from(WORDS).map(str.lower), st.sampled_from(WORDS))  # fmt: skip
    elif data_type is DataType.DOUBLE:
        values = st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f + 0.0)
    elif data_type is DataType.BOOLEAN:
        values = st.sampled_from([0, 1])
    else:
        values = st.binary(min_size=1, max_size=12)
    names = ["Murmur", "Murmur2", "Murmur3", "HashCode", "ByteArray"]
    if data_type in (DataType.INT, DataType.LONG):
        names.append("Modulo")
    if data_type is DataType.STRING:
        names.append("BoundedColumnValue")
    name = draw(st.sampled_from(names))
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    spec = {"functionName": _cased(name, flips), "numPartitions": draw(st.integers(1, 16))}
    if name == "Murmur3":
        config = {}
        if draw(st.booleans()):
            seed = draw(st.integers(-(2**31), 2**31 - 1))
            config["seed"] = draw(st.sampled_from([seed, str(seed)]))
        variant = draw(st.sampled_from([None, "", "x86_32", "x64_32"]))
        if variant is not None:
            config["variant"] = variant
        spec["functionConfig"] = config
    if name == "BoundedColumnValue":
        bounded = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True))
        spec["functionConfig"] = {"columnValues": "|".join(bounded), "columnValuesDelimiter": "|"}
        spec["numPartitions"] = len(bounded) + 1
    stored = draw(st.lists(values, min_size=1, max_size=6, unique=True))
    probes = draw(st.lists(values, min_size=1, max_size=4))
    return data_type, stored, probes, spec


def sql_literal(value, data_type: DataType) -> str:
    if data_type is DataType.BYTES:
        return f"'{value.hex()}'"
    if data_type is DataType.STRING:
        return "'" + value.replace("'", "''") + "'"
    if data_type is DataType.DOUBLE:
        return repr(value)
    if data_type is DataType.BOOLEAN:
        return "true" if value else "false"
    return str(value)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_writers_partitions_are_the_pruners_partitions(case):
    data_type, stored, probes, spec = case
    schema = make_schema(dimensions=[{"name": "k", "dataType": data_type.value}])
    config = make_table_config(
        schema, tableIndexConfig={"segmentPartitionConfig": {"columnPartitionMap": {"k": spec}}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        table = pa.table({"k": pa.array(stored, type=data_type.arrow_type)})
        built = build_segment(table, schema, config, Path(tmp))
        segment = load_segment(built.path)
        meta = segment.column("k").metadata
        recorded = frozenset(meta.partitions)
        # what the controller's upload writes to segment.partition.metadata
        zk_json = {"columnPartitionMap": {"k": {
            "functionName": meta.partition_function, "numPartitions": meta.num_partitions,
            "partitions": meta.partitions, "functionConfig": meta.partition_function_config}}}  # fmt: skip
        partitions, functions = recorded_partitions(orjson.dumps(zk_json).decode())
        assert partitions == {"k": recorded}
        by_segment = SegmentInfo("s", partitions=partitions, partition_functions=functions)
        by_table = SegmentInfo("s", partitions=partitions)
        partitioning = table_partitioning({"k": spec}, schema)
        function = partition_function(spec["functionName"], spec["numPartitions"],
                                      spec.get("functionConfig"))  # fmt: skip
        view = SegmentView(segment)
        for value in [*stored, *probes]:
            writer_partition = function.partitions_of_values([value], data_type)[0]
            expr = where(f"k = {sql_literal(value, data_type)}")
            holds = writer_partition in recorded
            for info in (by_segment, by_table):
                kept = prune([info], expr, time_column=None, time_unit_ms=None,
                             partitioning=partitioning)  # fmt: skip
                assert bool(kept) == holds, (value, info)
            server_reason = prune_reason(view, expr)
            if value in stored:
                assert server_reason is None, value
            if not holds:
                assert server_reason is not None, value
            in_list = where(f"k IN ({', '.join(sql_literal(v, data_type) for v in probes)})")
            any_held = any(function.partitions_of_values([v], data_type)[0] in recorded
                           for v in probes)  # fmt: skip
            assert bool(prune([by_segment], in_list, time_column=None, time_unit_ms=None,
                              partitioning=partitioning)) == any_held  # fmt: skip


def test_strings_with_quotes_and_unicode_hash_as_utf8():
    # a quick fixed example of the same agreement, readable when the property test fails
    murmur = partition_function("murmur", 7)
    assert murmur.partition_of_literal("été", DataType.STRING) == murmur.partition("été")
    assert murmur.partition_of_literal(42, DataType.INT) == murmur.partition("42")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"functionName": "Murmur3", "numPartitions": 4, "functionConfig": {"seed": "abc"}},
         "functionConfig.seed"),
        ({"functionName": "BoundedColumnValue", "numPartitions": 4,
          "functionConfig": {"columnValues": "a", "columnValuesDelimiter": "|"}}, "numPartitions"),
        ({"functionName": "Fnv", "numPartitions": 4}, "functionName"),
        ({"numPartitions": 4}, "functionName"),
    ],
)  # fmt: skip
def test_a_table_config_with_a_bad_partition_config_names_the_key(spec, field):
    schema = make_schema(dimensions=[{"name": "k", "dataType": "INT"}])
    with pytest.raises(ConfigError) as err:
        make_table_config(
            schema, tableIndexConfig={"segmentPartitionConfig": {"columnPartitionMap": {"k": spec}}}
        )
    assert (
        err.value.field == f"tableIndexConfig.segmentPartitionConfig.columnPartitionMap.k.{field}"
    )
