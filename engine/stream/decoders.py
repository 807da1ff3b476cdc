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

import fastavro
import orjson
import pyarrow as pa
import pyarrow.json as pajson
from fastavro.schema import UnknownType

from engine.common.errors import ConfigError
from engine.ingest import records_to_batch


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


_UNSET = object()
_SCALAR_TYPES = {str: pa.string(), bool: pa.bool_(), int: pa.int64(), float: pa.float64()}


class JsonDecoder:
    """One JSON object per message (Pinot's KafkaJSONMessageDecoder).

    Fast path: when the fields to read have had one scalar JSON type each so far, the whole
    batch is parsed by Arrow's JSON reader as one newline-delimited document with those
    types. Anything that does not fit (a bad message, a type change, a message spanning
    lines, a nested field) makes that batch take the per-message path, which also learns
    the field types."""

    def __init__(self, props: dict, schema=None):
        self._types: dict[str, pa.DataType | None] = {}

    def decode_fast(self, payloads: list[bytes], fields: list[str] | None) -> pa.Table | None:
        if not fields or not payloads or any(t is None for t in map(self._types.get, fields)):
            return None
        # one message per line (a trailing newline is fine: blank lines are skipped)
        if any(not isinstance(p, bytes) or p.find(b"\n") not in (-1, len(p) - 1) for p in payloads):
            return None
        schema = pa.schema([(f, self._types[f]) for f in fields])
        document = b"\n".join(payloads)
        try:
            table = pajson.read_json(
                pa.BufferReader(document),
                # one block holding the whole batch, and no bigger: the reader allocates it
                read_options=pajson.ReadOptions(use_threads=False, block_size=len(document) + 1),
                parse_options=pajson.ParseOptions(
                    explicit_schema=schema, unexpected_field_behavior="ignore"
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return table if table.num_rows == len(payloads) else None

    def learn(self, records: list[dict], fields: list[str] | None) -> None:
        for field in fields or ():
            kinds = {type(r[field]) for r in records if r.get(field) is not None}
            known = self._types.get(field, _UNSET)
            if not kinds:  # not in the messages (yet): null until a value shows its type
                if known is _UNSET:
                    self._types[field] = pa.null()
                continue
            if kinds == {int, float}:  # JSON writes 3.0 as 3
                kinds = {float}
            kind = _SCALAR_TYPES.get(next(iter(kinds))) if len(kinds) == 1 else None
            if kind == pa.int64() and known == pa.float64():
                kind = known
            if known is _UNSET or known == pa.null() or known == kind:
                self._types[field] = kind
            else:
                self._types[field] = None  # the type changed: per-message path from now on

    def decode_records(self, payloads: list[bytes]) -> tuple[list[dict], list[int], dict]:
        records, positions, errors = [], [], {}
        for i, payload in enumerate(payloads):
            try:
                record = orjson.loads(payload)
            except (orjson.JSONDecodeError, TypeError) as err:
                errors[i] = f"not valid JSON: {err}"
                continue
            if not isinstance(record, dict):
                errors[i] = f"expected a JSON object, got {type(record).__name__}"
                continue
            records.append(record)
            positions.append(i)
        return records, positions, errors


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
        fast = getattr(self._impl, "decode_fast", None)
        table = fast(payloads, self._fields) if fast is not None else None
        if table is not None:
            batch = table.combine_chunks().to_batches()
            batch = batch[0] if batch else records_to_batch([], self._fields)
            return DecodedBatch(batch, list(range(len(payloads))), {})
        records, positions, errors = self._impl.decode_records(payloads)
        if hasattr(self._impl, "learn"):
            self._impl.learn(records, self._fields)
        return DecodedBatch(records_to_batch(records, self._fields), positions, errors)
