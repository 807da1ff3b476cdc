"""Every data type, single- and multi-value, through write -> tar -> untar -> read."""

import decimal
import math

import numpy as np
import pyarrow as pa
import pytest

from engine.common.errors import SegmentError
from engine.segment import build_segment, load_segment, pack_segment, unpack_segment
from tests.engine.conftest import make_schema, make_table_config

VALUES = {
    "INT": [3, None, -(2**31) + 1, 7, 3],
    "LONG": [2**40, -5, None, 0, 2**40],
    "FLOAT": [1.5, -0.25, None, 3.0, 1.5],
    "DOUBLE": [math.pi, -1e300, 0.0, None, 2.5],
    "BIG_DECIMAL": ["12.345", "-0.001", None, "99999999.5", "12.345"],
    "BOOLEAN": [True, False, None, True, True],
    "TIMESTAMP": [1626847200000, 0, None, 1, 1626847200000],
    "STRING": ["b", "", None, "ünïcode", "a"],
    "JSON": ['{"a": 1}', "[]", None, '"s"', "null"],
    "BYTES": [b"\x00\x01", b"", None, b"\xff", b"\x00\x01"],
}
DECODE = {
    "BOOLEAN": lambda v: int(v),
    "BIG_DECIMAL": lambda v: decimal.Decimal(v),
}


def expected(data_type: str, raw, default):
    if raw is None:
        return default
    return DECODE.get(data_type, lambda v: v)(raw)


def schema_and_table():
    dims, metrics, columns = [], [], {}
    for data_type, values in VALUES.items():
        dims.append({"name": f"sv_{data_type}", "dataType": data_type})
        dims.append({"name": f"mv_{data_type}", "dataType": data_type, "singleValueField": False})
        columns[f"sv_{data_type}"] = values
        columns[f"mv_{data_type}"] = [
            [v, values[0]] if v is not None else None for v in values[:-1]
        ] + [[]]
        if data_type in ("INT", "LONG", "DOUBLE", "STRING", "BYTES"):
            metrics.append({"name": f"raw_{data_type}", "dataType": data_type})
            columns[f"raw_{data_type}"] = values
    return make_schema(dimensions=dims, metrics=metrics), pa.table(columns)


@pytest.mark.parametrize("raw_metrics", [False, True])
def test_every_type_round_trips_through_tar(tmp_path, raw_metrics):
    schema, table = schema_and_table()
    no_dict = [f.name for f in schema.fields if f.name.startswith("raw_")] if raw_metrics else []
    config = make_table_config(schema, tableIndexConfig={"noDictionaryColumns": no_dict})
    result = build_segment(table, schema, config, tmp_path / "built", segment_name="seg_all_types")
    assert (result.name, result.num_rows, result.num_rows_skipped) == ("seg_all_types", 5, 0)

    tarball = pack_segment(result.path, tmp_path / "deep" / "seg_all_types.tar.gz")
    segment = load_segment(unpack_segment(tarball, tmp_path / "server"))
    assert segment.total_docs == 5
    assert segment.metadata.crc == result.metadata.crc
    assert segment.table_name == "t_OFFLINE"

    for spec in schema.fields:
        column = segment.column(spec.name)
        data_type = spec.data_type.value
        default = spec.default_null_value
        source = table.column(spec.name).to_pylist()
        assert column.metadata.has_dictionary == (spec.name not in no_dict)
        if spec.single_value:
            want = [expected(data_type, v, default) for v in source]
            got = list(column.values())
        else:
            offsets, flat = column.values()
            got = [list(flat[offsets[d] : offsets[d + 1]]) for d in range(5)]
            want = [
                [expected(data_type, v, default) for v in vs] if vs else [default] for vs in source
            ]
            want = [[default if v is None else v for v in vs] for vs in want]
        assert [_norm(v) for v in _flatten(got)] == [_norm(v) for v in _flatten(want)], spec.name
        stored = [w for w in _flatten(want)]
        if column.dictionary is not None:
            assert (
                column.metadata.cardinality
                == len(column.dictionary)
                == len({_norm(v) for v in stored})
            )
            values = [_norm(column.dictionary.get(i)) for i in range(len(column.dictionary))]
            assert values == sorted(values, key=_sort_key)
            for v in stored:
                assert column.dictionary.index_of(v) >= 0


def _flatten(values):
    out = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def _norm(v):
    # Test values are exact in float32, so FLOAT needs no tolerance.
    return v.item() if isinstance(v, np.generic) else v


def _sort_key(v):
    return v.encode() if isinstance(v, str) else v


def test_metadata_json_has_pinot_like_fields(tmp_path):
    schema = make_schema(
        dimensions=[{"name": "city", "dataType": "STRING"}],
        datetimes=[
            {"name": "day", "dataType": "INT", "format": "1:DAYS:EPOCH", "granularity": "1:DAYS"}
        ],
    )
    config = make_table_config(schema, segmentsConfig={"timeColumnName": "day"})
    result = build_segment(
        pa.table({"city": ["b", "a", "b"], "day": [18000, 18002, 18001]}),
        schema,
        config,
        tmp_path,
        sequence_id=3,
    )
    assert result.name == "t_18000_18002_3"
    meta = load_segment(result.path).metadata.to_json()
    for key in (
        "segmentName",
        "tableName",
        "totalDocs",
        "crc",
        "creationTime",
        "startTime",
        "endTime",
        "timeColumn",
        "timeUnit",
        "columns",
    ):
        assert key in meta
    assert (meta["startTime"], meta["endTime"], meta["timeUnit"], meta["timeColumn"]) == (
        18000,
        18002,
        "DAYS",
        "day",
    )
    city = meta["columns"]["city"]
    assert (city["cardinality"], city["minValue"], city["maxValue"], city["isSorted"]) == (
        2,
        "a",
        "b",
        False,
    )
    assert meta["columns"]["day"]["isSorted"] is False


def test_sorted_column_is_sorted_and_has_doc_ranges(tmp_path):
    schema = make_schema(
        dimensions=[{"name": "k", "dataType": "STRING"}, {"name": "v", "dataType": "INT"}]
    )
    config = make_table_config(schema, tableIndexConfig={"sortedColumn": ["k"]})
    table = pa.table({"k": ["c", "a", "b", "a", "c", "c"], "v": [1, 2, 3, 4, 5, 6]})
    segment = load_segment(build_segment(table, schema, config, tmp_path).path)
    k = segment.column("k")
    assert k.metadata.is_sorted
    assert list(k.values()) == ["a", "a", "b", "c", "c", "c"]
    assert list(segment.column("v").values()) == [2, 4, 3, 1, 5, 6]  # stable sort
    assert k.sorted_doc_range(k.dictionary.index_of("c")) == (3, 6)
    assert list(k.inverted_index.bitmap(0)) == [0, 1]


def test_loading_reads_no_column_data(tmp_path):
    schema = make_schema(dimensions=[{"name": "k", "dataType": "INT"}])
    table = pa.table({"k": np.arange(100_000, dtype=np.int32)})
    result = build_segment(table, schema, make_table_config(schema), tmp_path)
    data = result.path / "columns.psf"
    assert sorted(p.name for p in result.path.iterdir()) == [
        "columns.psf",
        "creation.meta",
        "index_map.json",
        "metadata.json",
        "metadata.properties",
    ]
    data.write_bytes(data.read_bytes()[:100])  # truncate the column data
    segment = load_segment(result.path)  # reads metadata only
    assert segment.total_docs == 100_000
    assert segment.column("k").metadata.cardinality == 100_000
    with pytest.raises(SegmentError, match="truncated"):
        segment.column("k").values()


def test_null_vector_and_time_bounds_in_ms(tmp_path):
    schema = make_schema(
        dimensions=[
            {"name": "city", "dataType": "STRING"},
            {"name": "tags", "dataType": "INT", "singleValueField": False},
        ],
        metrics=[{"name": "amount", "dataType": "DOUBLE"}],
        datetimes=[
            {"name": "day", "dataType": "INT", "format": "1:DAYS:EPOCH", "granularity": "1:DAYS"}
        ],
    )
    config = make_table_config(
        schema,
        segmentsConfig={"timeColumnName": "day"},
        tableIndexConfig={"nullHandlingEnabled": True, "sortedColumn": ["day"]},
    )
    table = pa.table(
        {
            "city": ["a", None, "c"],
            "tags": [[1], [], None],
            "amount": [None, 2.0, 3.0],
            "day": [3, 1, 2],
        }
    )
    segment = load_segment(build_segment(table, schema, config, tmp_path).path)
    # Sorted by day: rows are (1, None, [], 2.0), (2, "c", None, 3.0), (3, "a", [1], None).
    assert list(segment.column("city").null_bitmap) == [0]
    assert list(segment.column("tags").null_bitmap) == [0, 1]
    assert list(segment.column("amount").null_bitmap) == [2]
    assert list(segment.column("day").null_bitmap) == []
    assert list(segment.column("city").values()) == ["null", "c", "a"]
    meta = segment.metadata
    assert (meta.start_time, meta.end_time) == (1, 3)
    assert (meta.start_time_ms, meta.end_time_ms) == (86_400_000, 3 * 86_400_000)
    plain = load_segment(
        build_segment(table, schema, make_table_config(schema), tmp_path / "plain").path
    )
    assert plain.column("city").null_bitmap is None


def test_float_dictionary_lookups_use_32_bit_values(tmp_path):
    schema = make_schema(dimensions=[{"name": "f", "dataType": "FLOAT"}])
    segment = load_segment(
        build_segment(
            pa.table({"f": [0.1, 0.2, 0.3]}), schema, make_table_config(schema), tmp_path
        ).path
    )
    dictionary = segment.column("f").dictionary
    assert dictionary.index_of(0.1) == 0 and dictionary.index_of(0.3) == 2
    assert dictionary.index_of(0.25) == -1
    assert dictionary.id_range(0.1, 0.3, False, False) == (1, 2)


def test_close_then_reopen(tmp_path):
    schema = make_schema(dimensions=[{"name": "k", "dataType": "INT"}])
    result = build_segment(pa.table({"k": [3, 1, 2]}), schema, make_table_config(schema), tmp_path)
    segment = load_segment(result.path)
    assert list(segment.column("k").values()) == [3, 1, 2]
    assert segment.size_bytes() == sum(p.stat().st_size for p in result.path.iterdir())
    segment.close()
    assert list(segment.column("k").values()) == [3, 1, 2]  # maps the file again


@pytest.mark.parametrize("raw_metrics", [False, True])
def test_segment_reads_back_as_arrow_and_rebuilds(tmp_path, raw_metrics):
    schema, table = schema_and_table()
    no_dict = [f.name for f in schema.fields if f.name.startswith("raw_")] if raw_metrics else []
    config = make_table_config(
        schema, tableIndexConfig={"noDictionaryColumns": no_dict, "nullHandlingEnabled": True}
    )
    first = load_segment(build_segment(table, schema, config, tmp_path / "a").path)
    exported = first.to_arrow()
    assert exported.num_rows == 5 and exported.column_names == schema.columns
    assert exported.column("sv_STRING").to_pylist() == VALUES["STRING"]  # nulls come back as nulls
    second = load_segment(build_segment(exported, schema, config, tmp_path / "b").path)
    for name in schema.columns:
        a, b = first.column(name), second.column(name)
        if a.metadata.single_value:
            assert [_norm(v) for v in a.values()] == [_norm(v) for v in b.values()], name
        else:
            assert [_norm(v) for v in a.values()[1]] == [_norm(v) for v in b.values()[1]], name
        assert list(a.null_bitmap) == list(b.null_bitmap), name
