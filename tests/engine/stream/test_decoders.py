"""Decoders: JSON, Avro (schema from the config) and CSV; a bad message is reported by
position and never fails the batch."""

from __future__ import annotations

import io

import fastavro
import orjson

from engine.spi import Schema
from engine.stream.config import parse_stream_config
from engine.stream.decoders import MessageDecoder

AVRO_SCHEMA = {
    "type": "record",
    "name": "Event",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}],
}


def _stream(decoder: str, **props) -> object:
    return parse_stream_config(
        {
            "streamType": "kafka",
            "stream.kafka.topic.name": "t",
            "stream.kafka.decoder.class.name": decoder,
            **{f"stream.kafka.decoder.prop.{k}": v for k, v in props.items()},
        }
    )


def test_json_decoder_skips_bad_messages():
    decoder = MessageDecoder.for_stream(
        _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    )
    decoded = decoder.decode(
        [b'{"id": 1, "tags": ["a"]}', b"{not json", b"[1, 2]", b'{"id": 2, "name": "x"}', None]
    )
    assert decoded.positions == [0, 3]
    assert sorted(decoded.errors) == [1, 2, 4]
    assert "not valid JSON" in decoded.errors[1]
    assert "expected a JSON object" in decoded.errors[2]
    assert decoded.batch.to_pylist() == [
        {"id": 1, "tags": ["a"], "name": None},
        {"id": 2, "tags": None, "name": "x"},
    ]


def test_avro_decoder_uses_the_configured_schema_and_strips_leading_bytes():
    def datum(record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(AVRO_SCHEMA), record)
        return b"\x00\x01" + out.getvalue()

    decoder = MessageDecoder.for_stream(
        _stream(
            "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder",
            schema=orjson.dumps(AVRO_SCHEMA).decode(),
            **{"leading.bytes.to.strip": "2"},
        )
    )
    good = datum({"id": 7, "name": "seven"})
    decoded = decoder.decode([good, good[:3], datum({"id": 8, "name": None})])
    assert decoded.positions == [0, 2]
    assert list(decoded.errors) == [1]
    assert decoded.batch.to_pylist() == [{"id": 7, "name": "seven"}, {"id": 8, "name": None}]


def test_csv_decoder_with_header_and_multi_values():
    schema = Schema.from_json(
        {
            "schemaName": "t",
            "dimensionFieldSpecs": [
                {"name": "name", "dataType": "STRING"},
                {"name": "subjects", "dataType": "STRING", "singleValueField": False},
            ],
            "metricFieldSpecs": [{"name": "age", "dataType": "INT"}],
        }
    )
    stream = _stream(
        "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder",
        header="name;age;subjects",
        delimiter=";",
        multiValueDelimiter=",",
    )
    decoded = MessageDecoder.for_stream(stream, schema).decode(
        [b"Alice;18;math,art", b"Bob;19", b'"Carol; Jr";20;', b"\xff\xfe;1;x"]
    )
    assert decoded.positions == [0, 2]
    assert "expected 3 CSV fields, got 2" in decoded.errors[1]
    assert 3 in decoded.errors
    assert decoded.batch.to_pylist() == [
        {"name": "Alice", "age": "18", "subjects": ["math", "art"]},
        {"name": "Carol; Jr", "age": "20", "subjects": []},
    ]


def test_json_fast_path_gives_the_per_message_result_and_falls_back_when_it_must():
    stream = _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    fields = ["id", "n", "price", "ok", "later"]
    fast = MessageDecoder.for_stream(stream, fields=fields)
    slow = MessageDecoder.for_stream(stream, fields=fields)
    slow._impl.decode_fast = lambda payloads, fields: None

    def rows(i):
        return orjson.dumps(
            {"id": f"e{i}", "n": i, "price": i / 2, "ok": i % 2 == 0, "nested": {"a": [1]}}
        ) + (b"\n" if i % 3 == 0 else b"")

    batches = [
        [rows(i) for i in range(0, 50)],  # learns the field types
        [rows(i) for i in range(50, 100)],  # fast
        [rows(100), b"{broken", rows(101)],  # a bad message: per-message for this batch
        [orjson.dumps({"id": 7, "n": "x"}), rows(102)],  # types change: per-message from now
        [b'{"id": "p",\n "n": 1}', rows(103)],  # a message over two lines
        [orjson.dumps({"id": "q", "n": 5, "price": 2, "later": "now"})],
    ]
    for batch in batches:
        got, want = fast.decode(batch), slow.decode(batch)
        assert got.positions == want.positions and list(got.errors) == list(want.errors)
        assert got.batch.to_pylist() == want.batch.to_pylist()
        assert got.batch.num_rows == len(batch) - len(got.errors)
    # the fast path really ran on the second batch
    assert fast._impl.decode_fast(batches[1], fields) is None  # types changed since
    fresh = MessageDecoder.for_stream(stream, fields=fields)
    fresh.decode(batches[0])
    assert fresh._impl.decode_fast(batches[1], fields).num_rows == 50
