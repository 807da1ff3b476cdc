"""Raw columns' compression codecs (fieldConfigList[].compressionCodec): each applied codec
round-trips every raw type, single- and multi-value, to the same answers as the default; a
segment written before codecs existed still reads; Pinot's refusals and the warning for a
codec Sprig does not apply."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine.common.errors import ConfigError, SegmentError
from engine.query import run_query
from engine.segment import build_segment, load_segment, unpack_segment
from engine.segment.chunked import CHUNK_ROWS, ChunkedArray, compress_batches, write_chunks
from engine.segment.files import BufferReader, BufferWriter
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

CODECS = ["LZ4", "ZSTANDARD", "SNAPPY", "PASS_THROUGH"]
RAW = ["i", "l", "f", "d", "s", "b", "dec", "mv_i", "mv_s"]
SCHEMA = {
    "schemaName": "codec",
    "dimensionFieldSpecs": [
        {"name": "s", "dataType": "STRING"},
        {"name": "b", "dataType": "BYTES"},
        {"name": "mv_i", "dataType": "INT", "singleValueField": False},
        {"name": "mv_s", "dataType": "STRING", "singleValueField": False},
        {"name": "key", "dataType": "STRING"},
    ],
    "metricFieldSpecs": [
        {"name": "i", "dataType": "INT"},
        {"name": "l", "dataType": "LONG"},
        {"name": "f", "dataType": "FLOAT"},
        {"name": "d", "dataType": "DOUBLE"},
        {"name": "dec", "dataType": "BIG_DECIMAL"},
    ],
}
QUERIES = [
    "SELECT key, SUM(i), SUM(l), MAX(f), MIN(d), COUNT(*) FROM codec GROUP BY key ORDER BY key",
    "SELECT s, b, dec, mv_i, mv_s FROM codec WHERE i % 9973 = 1 ORDER BY i LIMIT 20",
    "SELECT COUNT(*) FROM codec WHERE s LIKE '%7%' AND d > 0.5",
    "SELECT mv_s, COUNT(*) FROM codec GROUP BY mv_s ORDER BY mv_s LIMIT 5",
    "SELECT SUMMV(mv_i), DISTINCTCOUNT(s), SUM(dec) FROM codec",
]


def _rows(n: int = CHUNK_ROWS + 4_000) -> pa.Table:  # two chunks per raw column
    rng = np.random.default_rng(7)
    i = rng.integers(-1000, 1000, n)
    return pa.table({
        "key": [f"k{v % 5}" for v in range(n)],
        "i": pa.array(i, pa.int32()), "l": pa.array(i * 1_000_003, pa.int64()),
        "f": pa.array(rng.random(n), pa.float32()), "d": pa.array(rng.random(n)),
        "s": [f"s{v}" for v in rng.integers(0, 50_000, n)],
        "b": [bytes([v % 256, (v * 7) % 256]) for v in range(n)],
        "dec": [str(v / 4) for v in range(n)],
        "mv_i": [[v, v + 1][: v % 3] for v in range(n)],
        "mv_s": [[f"m{v % 11}", f"x{v % 4}"] for v in range(n)],
    })  # fmt: skip


def _build(tmp_path: Path, codec: str | None, rows: pa.Table):
    config = {"tableName": "codec", "tableType": "OFFLINE", "segmentsConfig": {"replication": "1"},
              "tableIndexConfig": {"noDictionaryColumns": RAW}}  # fmt: skip
    if codec:
        config["fieldConfigList"] = [
            {"name": c, "encodingType": "RAW", "compressionCodec": codec} for c in RAW
        ]
    config = TableConfig.from_json(config, Schema.from_json(SCHEMA))
    built = build_segment(rows, Schema.from_json(SCHEMA), config, tmp_path / (codec or "default"))
    return load_segment(built.path)


def _answers(segment) -> list:
    schema = Schema.from_json(SCHEMA)
    out = []
    for sql in QUERIES:
        response = run_query(sql, [segment], table_schema=schema)
        assert not response["exceptions"], (sql, response["exceptions"])
        out.append(response["resultTable"]["rows"])
    return out


def test_every_codec_answers_as_the_default(tmp_path):
    rows = _rows()
    reference = _answers(_build(tmp_path, None, rows))
    sizes = {}
    for codec in CODECS:
        segment = _build(tmp_path, codec, rows)
        for column in RAW:
            meta = segment.metadata.columns[column]
            assert meta.compression_codec == codec
            assert meta.forward_format == ("raw-zstd" if codec == "ZSTANDARD" and column in (
                "i", "l", "f", "d", "mv_i") else "raw-arrow" if codec == "ZSTANDARD" else "raw-chunked")  # fmt: skip
        assert _answers(segment) == reference, codec
        for column in ("s", "d", "mv_s"):  # whole columns decode to the input values
            got = segment.column(column).values()
            want = rows.column(column).to_pylist()
            if column == "mv_s":
                offsets, flat = got
                got = [list(flat[offsets[k] : offsets[k + 1]]) for k in range(len(offsets) - 1)]
            assert list(got) == want, (codec, column)
        sizes[codec] = segment.size_bytes()
    assert sizes["PASS_THROUGH"] > max(sizes["ZSTANDARD"], sizes["LZ4"], sizes["SNAPPY"])
    assert sizes["ZSTANDARD"] < min(sizes["LZ4"], sizes["SNAPPY"])


def test_a_segment_written_before_codecs_still_reads(tmp_path):
    archive = Path(__file__).parent / "data" / "segment_before_codecs.tar.gz"
    segment = load_segment(unpack_segment(archive, tmp_path))
    assert segment.metadata.columns["note"].forward_format == "raw-arrow"
    assert segment.metadata.columns["n"].forward_format == "raw-zstd"
    assert segment.metadata.columns["n"].compression_codec is None
    sql = "SELECT COUNT(*), SUM(n), SUM(x), DISTINCTCOUNT(note) FROM old WHERE note <> 'n3'"
    response = run_query(sql, [segment])
    kept = [i for i in range(3000) if i % 10 != 3]
    assert response["resultTable"]["rows"] == [
        [len(kept), float(sum(kept)), sum((i % 100) * 0.5 for i in kept), 9]
    ]
    assert list(segment.column("note").values()[:3]) == ["n0", "n1", "n2"]


@pytest.mark.parametrize("codec", ["LZ4", "SNAPPY", "ZSTANDARD"])
def test_a_corrupt_chunk_is_a_segment_error(tmp_path, codec):
    writer = BufferWriter(tmp_path)
    write_chunks(writer, "x", *compress_batches(pa.array([f"v{i}" for i in range(5000)]), codec))
    writer.close()
    data = bytearray((tmp_path / "columns.psf").read_bytes())
    chunk = 8 + int.from_bytes(data[:8], "little")  # the chunk's own header: sizes, magic
    data[chunk : chunk + 8] = b"\xff" * 8
    (tmp_path / "columns.psf").write_bytes(bytes(data))
    with pytest.raises(SegmentError, match="corrupt"):
        ChunkedArray(BufferReader(tmp_path).bytes("x"), "x").read()


def _config(field: dict, no_dict=("s",)) -> dict:
    return {"tableName": "codec", "tableType": "OFFLINE", "segmentsConfig": {"replication": "1"},
            "tableIndexConfig": {"noDictionaryColumns": list(no_dict)},
            "fieldConfigList": [field]}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ({"name": "key", "compressionCodec": "LZ4"},
         "Compression codec: LZ4 is not applicable to dictionary encoded column: key"),
        ({"name": "s", "compressionCodec": "BROTLI", "encodingType": "RAW"}, "unknown compression codec 'BROTLI'"),
        ({"name": "s", "compressionCodec": "DELTA", "encodingType": "RAW"},
         "Compression codec DELTA can only be used on INT/LONG data types"),
        ({"name": "i", "compressionCodec": "CLP", "encodingType": "RAW"},
         "Cannot apply CLP compression codec to column: i of stored type other than STRING"),
        ({"name": "s", "compressionCodec": "MV_ENTRY_DICT", "encodingType": "RAW"},
         "Compression codec: MV_ENTRY_DICT is not applicable to raw column: s"),
    ],
)  # fmt: skip
def test_pinot_refusals(field, message):
    with pytest.raises(ConfigError, match=message):
        TableConfig.from_json(_config(field, no_dict=("s", "i")), Schema.from_json(SCHEMA))


def test_codecs_sprig_does_not_apply_are_warnings():
    config = TableConfig.from_json(
        _config({"name": "s", "encodingType": "RAW", "compressionCodec": "gzip"}),
        Schema.from_json(SCHEMA),
    )
    (warning,) = [w for w in config.warnings if "compressionCodec" in w["field"]]
    assert warning["field"] == "fieldConfigList[0].compressionCodec"
    assert "GZIP codec is not implemented" in warning["message"]
    assert config.compression_codecs == {}
    applied = TableConfig.from_json(
        _config({"name": "s", "encodingType": "RAW", "indexes": {"forward": {"compressionCodec": "SNAPPY"}}}),
        Schema.from_json(SCHEMA),
    )  # fmt: skip
    assert applied.compression_codecs == {"s": "SNAPPY"}
    assert not [w for w in applied.warnings if "compressionCodec" in w["field"]]
