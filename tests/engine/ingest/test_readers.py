import fastavro
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.common.errors import IngestError
from engine.ingest.readers import read_records
from tests.engine.conftest import make_schema

SCHEMA = make_schema(
    dimensions=[
        {"name": "code", "dataType": "STRING"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
    ],
    metrics=[{"name": "n", "dataType": "INT"}],
)


def rows(path, fmt=None, **kw):
    return pa.Table.from_batches(list(read_records(path, fmt, **kw))).to_pylist()


def test_csv_keeps_text_columns_and_splits_multi_values(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("code,tags,n\n007,a;b,1\n010,c,2\n")
    out = rows(path, schema=SCHEMA)
    assert out == [
        {"code": "007", "tags": ["a", "b"], "n": 1},
        {"code": "010", "tags": ["c"], "n": 2},
    ]


def test_csv_header_option_and_delimiter(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("x\t1\ny\t2\n")
    out = rows(path, "csv", options={"header": "code\tn", "delimiter": "\t"})
    assert out == [{"code": "x", "n": 1}, {"code": "y", "n": 2}]


def test_json_lines_and_array(tmp_path):
    lines = tmp_path / "a.json"
    lines.write_text('{"code": "a", "n": 1}\n\n{"code": "b", "n": 2, "extra": {"k": 1}}\n')
    assert [r["code"] for r in rows(lines)] == ["a", "b"]
    array = tmp_path / "b.json"
    array.write_bytes(orjson.dumps([{"code": "a", "n": 1}, {"code": "b", "n": 2}]))
    assert rows(array) == [{"code": "a", "n": 1}, {"code": "b", "n": 2}]


def test_json_mixed_nested_types_are_kept_as_text(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"code": {"a": 1}, "n": 1, "extra": 1}\n{"code": [1, 2], "n": 2}\n')
    out = rows(path, schema=SCHEMA)
    assert out[0]["code"] == '{"a":1}' and out[1]["code"] == "[1,2]"
    assert out[0]["extra"] == 1  # keys outside the schema stay: transforms may read them


def test_records_to_batch():
    from engine.ingest import records_to_batch

    batch = records_to_batch([{"a": 1, "b": "x"}, {"a": 2, "c": {"k": 1}}], columns=["a", "c"])
    assert batch.to_pylist() == [{"a": 1, "c": None}, {"a": 2, "c": {"k": 1}}]


def test_bad_json_line_reports_its_position(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"code": "a"}\n{"code": \n{"code": "c"}\n')
    with pytest.raises(IngestError) as info:
        rows(path)
    assert info.value.row == 1 and info.value.source == str(path)


def test_avro_and_parquet(tmp_path):
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "code", "type": ["null", "string"]}, {"name": "n", "type": "int"}],
    }
    avro = tmp_path / "a.avro"
    with open(avro, "wb") as fh:
        fastavro.writer(fh, schema, [{"code": "a", "n": 1}, {"code": None, "n": 2}])
    assert rows(avro) == [{"code": "a", "n": 1}, {"code": None, "n": 2}]
    parquet = tmp_path / "a.parquet"
    pq.write_table(pa.table({"code": ["x"], "n": [3], "other": [1.5]}), parquet)
    assert rows(parquet, schema=SCHEMA) == [{"code": "x", "n": 3}]


def test_batches_are_bounded(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("n\n" + "\n".join(str(i) for i in range(1000)) + "\n")
    batches = list(read_records(path, options={"batchSize": 100}))
    assert max(b.num_rows for b in batches) <= 100
    assert sum(b.num_rows for b in batches) == 1000


def test_missing_file_unknown_format_and_corrupt_files(tmp_path):
    with pytest.raises(IngestError, match="does not exist"):
        list(read_records(tmp_path / "nope.csv"))
    (tmp_path / "a.xlsx").write_text("x")
    with pytest.raises(IngestError, match="data format"):
        list(read_records(tmp_path / "a.xlsx"))
    bad = tmp_path / "bad.avro"
    bad.write_bytes(b"not avro at all")
    with pytest.raises(IngestError):
        list(read_records(bad))
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"PAR1garbage")
    with pytest.raises(IngestError):
        list(read_records(bad_parquet))
