"""Decoders: JSON, Avro (schema from the config) and CSV; a bad message is reported by
position and never fails the batch."""

from __future__ import annotations

import io

import fastavro
import orjson

from engine.ingest import records_to_batch
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


def _reference(decoder: MessageDecoder, payloads: list) -> tuple:
    """The per-message orjson path: what the struct path must give."""
    records, positions, errors = decoder._impl.decode_records(payloads)
    return records_to_batch(records, decoder._fields), positions, errors


def _same_as_reference(fields: list[str], payloads: list) -> None:
    stream = _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    decoder = MessageDecoder.for_stream(stream, fields=fields)
    got = decoder.decode(payloads)
    batch, positions, errors = _reference(decoder, payloads)
    assert got.positions == positions
    assert got.errors == errors
    assert got.batch.schema == batch.schema
    assert got.batch.to_pylist() == batch.to_pylist()


def test_json_struct_path_gives_the_reference_result_on_github_events(pinot_examples):
    path = pinot_examples / "stream" / "githubEvents" / "rawdata" / "2021-07-21-few-hours.json"
    payloads = [line for line in path.read_bytes().splitlines() if line.strip()]
    fields = ["id", "type", "created_at", "created_at_timestamp", "actor", "payload", "public"]
    _same_as_reference(fields, payloads)
    _same_as_reference(["id", "type", "created_at", "created_at_timestamp"], payloads[:100])
    stream = _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    decoder = MessageDecoder.for_stream(stream, fields=fields)
    assert decoder._impl.decode_columns(payloads, fields).batch.num_rows == len(payloads)


def test_json_struct_path_gives_the_reference_result_on_odd_messages():
    odd = [
        b'{"id": 1, "tags": ["a"], "n": 2.5, "ok": true}',
        b"{not json",
        b"[1, 2]",
        b'"text"',
        None,
        b"",
        b'{"id": 2, "id": 3}',  # a repeated key: the last one, as orjson
        b'{"id": "\\u00e9t\\u00e9", "skip": {"deep": [1, {"x": null}]}}',
        '{"id": "été", "n": 1}'.encode(),
        b'{"id": 4, "skip": "\xff\xfe"}',  # invalid UTF-8 in a skipped field: refused
        b'{"id": 5, "skip": "\\ud800"}',  # a lone surrogate
        b'{"id": 6, "n": 1e400}',  # out of range
        b'{"id": 7} trailing',
        b' {"id": 8, "n": 3}\n',
        b'{"a.b": "dotted", "__key": "k", "$x": 1}',
        b'{"id": {"nested": true}, "n": "mixed"}',  # mixed types: JSON text columns
    ]
    _same_as_reference(["id", "tags", "n", "ok", "a.b", "__key", "$x"], odd)
    _same_as_reference(["id"], odd[:1])
    _same_as_reference(["id", "n"], [b"{bad", None])  # nothing decodes


def test_json_struct_path_falls_back_for_integers_past_64_bits():
    # msgspec keeps 2**70 exactly, orjson reads it as a float: the batch takes orjson's path
    payloads = [b'{"id": 1, "n": 1180591620717411303424}', b'{"id": 2, "n": 5}']
    _same_as_reference(["id", "n"], payloads)
    stream = _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    decoder = MessageDecoder.for_stream(stream, fields=["id", "n"])
    assert decoder._impl.decode_columns(payloads, ["id", "n"]) is None
    assert decoder.decode(payloads).batch.column("n").to_pylist() == [2.0**70, 5.0]


def test_json_without_fields_keeps_every_key():
    stream = _stream("org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder")
    decoded = MessageDecoder.for_stream(stream).decode([b'{"a": 1}', b'{"b": "x"}'])
    assert decoded.batch.to_pylist() == [{"a": 1, "b": None}, {"a": None, "b": "x"}]
