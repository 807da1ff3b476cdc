import math

import pyarrow as pa

from engine.ingest.coercion import coerce_table
from tests.engine.conftest import make_schema

SCHEMA = make_schema(
    dimensions=[
        {"name": "s", "dataType": "STRING", "maxLength": 4},
        {"name": "b", "dataType": "BOOLEAN"},
        {"name": "t", "dataType": "TIMESTAMP"},
        {"name": "i", "dataType": "INT"},
        {"name": "f", "dataType": "FLOAT"},
        {"name": "mv", "dataType": "LONG", "singleValueField": False},
    ],
    metrics=[{"name": "m", "dataType": "LONG"}],
)


def test_types_are_coerced_and_nulls_defaulted():
    data = pa.table(
        {
            "s": ["abcdefg", None, "x"],
            "b": ["true", "0", None],
            "t": ["2021-07-21T06:00:00", "1626847200000", None],
            "i": [1.9, -2.7, None],
            "f": ["1.5", " 2 ", None],
            "mv": [[1, 2], [], None],
        }
    )
    result = coerce_table(data, SCHEMA)
    assert result.bad_rows == {}
    rows = result.table.to_pylist()
    assert [r["s"] for r in rows] == ["abcd", "null", "x"]  # maxLength truncation
    assert [r["b"] for r in rows] == [1, 0, 0]
    assert [r["t"] for r in rows] == [1626847200000, 1626847200000, 0]
    assert [r["i"] for r in rows] == [1, -2, -(2**31)]  # floats truncate toward zero
    assert [r["f"] for r in rows][:2] == [1.5, 2.0] and math.isinf(rows[2]["f"])
    assert [r["mv"] for r in rows] == [[1, 2], [-(2**63)], [-(2**63)]]
    assert [r["m"] for r in rows] == [0, 0, 0]  # missing metric column


def test_a_column_of_only_nulls_gets_defaults_whatever_its_type():
    # a JSON batch where no record has the field decodes it as Arrow's null type (once this
    # stopped a consuming segment with "Unsupported cast from int64 to null")
    data = pa.table({name: pa.nulls(2) for name in ("s", "b", "t", "i", "f", "m")})
    result = coerce_table(data, SCHEMA)
    assert result.bad_rows == {}
    row = result.table.to_pylist()[0]
    assert (row["s"], row["b"], row["t"], row["i"], row["m"]) == ("null", 0, 0, -(2**31), 0)


def test_scalar_input_for_multi_value_column_is_wrapped():
    rows = coerce_table(pa.table({"mv": [5, None]}), SCHEMA).table.column("mv").to_pylist()
    assert rows == [[5], [-(2**63)]]


def test_bad_values_are_reported_per_row_and_column():
    data = pa.table(
        {
            "i": ["1", "x", "3", "2147483648"],
            "b": ["true", "true", "maybe", "false"],
            "mv": [["1"], ["2", "z"], ["3"], ["4"]],
        }
    )
    result = coerce_table(data, SCHEMA)
    assert sorted(result.bad_rows) == [1, 2, 3]
    assert "'i'" in result.bad_rows[1] and "'x'" in result.bad_rows[1]
    assert "'b'" in result.bad_rows[2]
    assert "'i'" in result.bad_rows[3]
    assert result.table.num_rows == 1


def test_bytes_from_hex_text():
    schema = make_schema(dimensions=[{"name": "b", "dataType": "BYTES"}])
    result = coerce_table(pa.table({"b": ["00ff", None, "AbCd", "xyz", "abc"]}), schema)
    assert sorted(result.bad_rows) == [3, 4]
    assert result.table.column("b").to_pylist() == [b"\x00\xff", b"", b"\xab\xcd"]


def test_nested_values_in_string_columns_become_json_text():
    schema = make_schema(dimensions=[{"name": "s", "dataType": "STRING"}])
    result = coerce_table(pa.table({"s": [{"a": 1}, None]}), schema)
    assert result.table.column("s").to_pylist() == ['{"a":1}', "null"]


def test_a_column_that_never_converts_fails_fast(tmp_path):
    import pytest

    from engine.common.errors import IngestError
    from engine.segment import build_segment
    from tests.engine.conftest import make_table_config

    schema = make_schema(dimensions=[{"name": "i", "dataType": "INT"}])
    data = pa.table({"i": ["x"] * 5000})
    with pytest.raises(IngestError, match="more than 1000 values") as info:
        build_segment(
            data,
            schema,
            make_table_config(schema),
            tmp_path,
            continue_on_error=True,
            source="f.csv",
        )
    assert (info.value.row, info.value.source) == (0, "f.csv")
