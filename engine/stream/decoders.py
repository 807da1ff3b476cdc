"""Message decoders: JSON, Avro (the writer schema given in the config) and CSV.

A decoder turns a batch of message payloads into one Arrow record batch. A payload that cannot
be decoded (bad JSON, truncated Avro, a CSV line with the wrong number of fields) is reported
by its position and left out; it never fails the batch, because one bad message must not stop
a partition (Pinot counts it and moves on).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import operator
from typing import Any

import fastavro
import msgspec
import orjson
import pyarrow as pa
from fastavro.schema import UnknownType

from engine.common.errors import ConfigError
from engine.ingest import records_to_batch
from engine.ingest.readers import values_to_array


@dataclasses.dataclass
class DecodedBatch:
    """``batch`` holds the decoded messages in order; ``positions[i]`` is the index, in the
    payload list, of row i; ``errors`` maps the index of each undecodable payload to why."""

    batch: pa.RecordBatch
    positions: list[int]
    errors: dict[int, str]


def _avro_schema(text: str, field: str):
    try:
        return fastavro.parse_schema(orjson.loads(text))
    except (orjson.JSONDecodeError, fastavro.schema.SchemaParseException, UnknownType) as e:
        raise ConfigError(field, f"not a valid Avro schema: {e}") from None
    except (TypeError, KeyError, ValueError, AttributeError) as e:  # fastavro's other rejections
        raise ConfigError(field, f"not a valid Avro schema: {e!r}") from None


def _csv_options(props: dict, field_prefix: str) -> dict:
    # Pinot renamed these keys twice (csv.delim -> csvDelimiter -> delimiter); take all three.
    def prop(*names):
        return next((props[n] for n in names if props.get(n) not in (None, "")), None)

    header = prop("header", "csvHeader", "csv.hdr")
    delimiter = prop("delimiter", "csvDelimiter", "csv.delim") or ","
    if header is None:
        raise ConfigError(
            field_prefix + "header",
            "a CSV stream needs its column names: each message is one line with no header",
        )
    if len(delimiter) != 1:
        raise ConfigError(field_prefix + "delimiter", f"expected one character, got {delimiter!r}")
    return {
        "header": [c.strip() for c in header.split(delimiter)],
        "delimiter": delimiter,
        "multi_value_delimiter": prop(
            "multiValueDelimiter", "csvMultiValueDelimiter", "csv.multiValDelim"
        )
        or ";",
        "null_string": prop("nullStringValue"),
        "quote": prop("quoteCharacter") or '"',
    }


def check_decoder_props(kind: str, props: dict, field_prefix: str) -> None:
    """ConfigError (naming ``<field_prefix><prop>``) when the decoder cannot be built from
    ``props``: Avro without a valid ``schema``, CSV without a ``header``."""
    if kind == "avro":
        if not props.get("schema"):
            raise ConfigError(
                field_prefix + "schema", "an Avro stream needs the writer schema as JSON text"
            )
        _avro_schema(props["schema"], field_prefix + "schema")
        strip = props.get("leading.bytes.to.strip", "0")
        if not str(strip).isdigit():
            raise ConfigError(
                field_prefix + "leading.bytes.to.strip", f"expected a whole number, got {strip!r}"
            )
    elif kind == "csv":
        _csv_options(props, field_prefix)


class JsonDecoder:
    """One JSON object per message (Pinot's KafkaJSONMessageDecoder).

    With the fields to read known (a consuming segment's), each message is decoded by msgspec
    into a struct of just those fields: the rest of the message is checked and skipped without
    a Python object made for it, which is most of a wide nested event. The per-message orjson
    path is the reference and decides whenever msgspec does not accept a message (its error
    text is the one reported) or gives values Arrow cannot hold as they are (an integer past
    64 bits, which orjson reads as a float): then it decodes that message, or that batch."""

    def __init__(self, props: dict, schema=None):
        self._structs: dict[tuple[str, ...], tuple[type, msgspec.json.Decoder]] = {}

    def _struct(self, fields: tuple[str, ...]) -> tuple[type, msgspec.json.Decoder]:
        known = self._structs.get(fields)
        if known is None:
            # attribute names f0, f1... : a field may be any JSON key ("a.b", "__key", "$x")
            attrs = [f"f{i}" for i in range(len(fields))]
            struct = msgspec.defstruct(
                "Fields",
                [(a, Any, None) for a in attrs],
                rename=dict(zip(attrs, fields, strict=True)),
            )
            known = self._structs[fields] = (struct, msgspec.json.Decoder(struct))
        return known

    def decode_columns(self, payloads: list[bytes], fields: list[str]) -> DecodedBatch | None:
        """``payloads`` decoded to a batch of ``fields`` (absent or null: null); None when
        this batch must take the reference path."""
        struct, decoder = self._struct(tuple(fields))
        decode = decoder.decode
        rows, positions, errors = [], [], {}
        for i, payload in enumerate(payloads):
            try:
                if not payload.isascii():
                    payload.decode("utf-8")  # msgspec does not check the strings it skips
                rows.append(decode(payload))
                positions.append(i)
                continue
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError,
                    AttributeError, TypeError):  # fmt: skip
                pass
            record, why = _json_record(payload)
            if why is not None:
                errors[i] = why
            else:
                rows.append(struct(*(record.get(f) for f in fields)))
                positions.append(i)
        try:
            arrays = [
                values_to_array(list(map(operator.attrgetter(f"f{j}"), rows)))
                for j in range(len(fields))
            ]
        except OverflowError:
            return None
        return DecodedBatch(pa.RecordBatch.from_arrays(arrays, names=fields), positions, errors)

    def decode_records(self, payloads: list[bytes]) -> tuple[list[dict], list[int], dict]:
        records, positions, errors = [], [], {}
        for i, payload in enumerate(payloads):
            record, why = _json_record(payload)
            if why is not None:
                errors[i] = why
                continue
            records.append(record)
            positions.append(i)
        return records, positions, errors


def _json_record(payload) -> tuple[dict | None, str | None]:
    """(the message as a dict, None) or (None, why it is not a JSON object)."""
    try:
        record = orjson.loads(payload)
    except (orjson.JSONDecodeError, TypeError) as err:
        return None, f"not valid JSON: {err}"
    if not isinstance(record, dict):
        return None, f"expected a JSON object, got {type(record).__name__}"
    return record, None


class AvroDecoder:
    """One schemaless Avro datum per message, written with the schema in the ``schema`` prop
    (Pinot's SimpleAvroMessageDecoder), after ``leading.bytes.to.strip`` bytes."""

    def __init__(self, props: dict, schema=None):
        self._schema = _avro_schema(props["schema"], "schema")
        self._strip = int(props.get("leading.bytes.to.strip", "0") or 0)

    def decode_records(self, payloads: list[bytes]) -> tuple[list[dict], list[int], dict]:
        records, positions, errors = [], [], {}
        for i, payload in enumerate(payloads):
            if payload is None:
                errors[i] = "empty message"
                continue
            buffer = io.BytesIO(payload[self._strip :])
            try:
                record = fastavro.schemaless_reader(buffer, self._schema)
            except (EOFError, ValueError, TypeError, IndexError, UnicodeDecodeError) as err:
                errors[i] = f"not a valid Avro datum for the configured schema: {err!r}"
                continue
            if not isinstance(record, dict):
                errors[i] = "the Avro schema does not describe a record"
                continue
            records.append(record)
            positions.append(i)
        return records, positions, errors


class CsvDecoder:
    """One CSV line per message with the configured ``header``; values stay text (the schema
    coercion types them) and multi-value columns split on ``multiValueDelimiter``."""

    def __init__(self, props: dict, schema=None):
        options = _csv_options(props, "")
        self._header = options["header"]
        self._delimiter = options["delimiter"]
        self._quote = options["quote"]
        self._mv_delimiter = options["multi_value_delimiter"]
        self._null = options["null_string"]
        self._mv_columns = (
            {f.name for f in schema.fields if not f.single_value} if schema is not None else set()
        )

    def decode_records(self, payloads: list[bytes]) -> tuple[list[dict], list[int], dict]:
        records, positions, errors = [], [], {}
        width = len(self._header)
        for i, payload in enumerate(payloads):
            try:
                text = payload.decode("utf-8")
                rows = list(csv.reader([text], delimiter=self._delimiter, quotechar=self._quote))
            except (UnicodeDecodeError, csv.Error, AttributeError) as err:
                errors[i] = f"not a CSV line: {err}"
                continue
            if len(rows) != 1 or len(rows[0]) != width:
                got = len(rows[0]) if rows else 0
                errors[i] = f"expected {width} CSV fields, got {got}"
                continue
            record = {}
            for name, value in zip(self._header, rows[0], strict=True):
                if self._null is not None and value == self._null:
                    value = None
                elif name in self._mv_columns:
                    value = value.split(self._mv_delimiter) if value else []
                record[name] = value
            records.append(record)
            positions.append(i)
        return records, positions, errors


_DECODERS = {"json": JsonDecoder, "avro": AvroDecoder, "csv": CsvDecoder}


class MessageDecoder:
    """Decodes payload batches for one stream config into Arrow. With ``fields``, only those
    fields are kept (Pinot's ``fieldsToRead``): the rest of a message is never turned into
    Arrow, which matters for wide nested events of which a table reads a few fields."""

    def __init__(self, kind: str, props: dict, schema=None, fields: list[str] | None = None):
        self.kind = kind
        self._impl = _DECODERS[kind](props, schema)
        self._fields = None if fields is None else list(fields)

    @classmethod
    def for_stream(cls, stream_config, schema=None, fields=None) -> MessageDecoder:
        return cls(stream_config.decoder, stream_config.decoder_props, schema, fields)

    def decode(self, payloads: list[bytes]) -> DecodedBatch:
        columns = getattr(self._impl, "decode_columns", None)
        if columns is not None and self._fields:
            decoded = columns(payloads, self._fields)
            if decoded is not None:
                return decoded
        records, positions, errors = self._impl.decode_records(payloads)
        return DecodedBatch(records_to_batch(records, self._fields), positions, errors)
