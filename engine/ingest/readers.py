"""Record readers: CSV, JSON (lines or one array), Avro (fastavro) and Parquet, each yielding
Arrow record batches.

``read_records(path, data_format, options=..., schema=...)`` is the one entry point. With a
schema, CSV columns of STRING/JSON/BYTES type are read as text (so "007" stays "007") and
multi-value CSV cells are split on ``multiValueDelimiter`` (";" by default, as in Pinot).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from engine.common.errors import IngestError
from engine.common.types import DataType
from engine.spi.schema import Schema

FORMATS = ("csv", "json", "avro", "parquet")
DEFAULT_BATCH_ROWS = 65_536


def detect_format(path: str | os.PathLike) -> str:
    """The data format from a file name (``.csv``, ``.json``/``.jsonl``, ``.avro``, ``.parquet``)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    aliases = {"jsonl": "json", "ndjson": "json", "tsv": "csv", "parq": "parquet"}
    fmt = aliases.get(suffix, suffix)
    if fmt not in FORMATS:
        raise IngestError(f"cannot tell the data format of {Path(path).name!r}", source=str(path))
    return fmt


def read_records(
    path: str | os.PathLike,
    data_format: str | None = None,
    *,
    options: dict | None = None,
    schema: Schema | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``path`` as Arrow batches of at most ``options['batchSize']`` rows.

    Options (Pinot's recordReaderSpec.configs names): ``delimiter``, ``header`` (a CSV header
    line to use when the file has none), ``multiValueDelimiter``, ``batchSize``. Raises
    IngestError (with ``source`` and, where known, ``row``) for a missing or malformed file.
    """
    path = Path(path)
    fmt = (data_format or detect_format(path)).lower()
    if fmt not in FORMATS:
        raise IngestError(
            f"unknown data format {data_format!r}; expected one of {', '.join(FORMATS)}",
            source=str(path),
        )
    if not path.is_file():
        raise IngestError("input file does not exist", source=str(path))
    options = dict(options or {})
    batch_rows = int(options.get("batchSize", DEFAULT_BATCH_ROWS))
    reader = {"csv": _read_csv, "json": _read_json, "avro": _read_avro, "parquet": _read_parquet}[
        fmt
    ]
    try:
        yield from reader(path, options, schema, batch_rows)
    except IngestError:
        raise
    except (pa.ArrowInvalid, OSError, ValueError, EOFError) as exc:
        raise IngestError(f"cannot read {fmt}: {exc}", source=str(path)) from exc


def _read_csv(
    path: Path, options: dict, schema: Schema | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    delimiter = options.get("delimiter", ",")
    header = options.get("header")
    read_opts = pacsv.ReadOptions(block_size=1 << 22)
    if header:
        read_opts.column_names = [c.strip() for c in str(header).split(delimiter)]
    column_types = {}
    mv_columns = []
    if schema is not None:
        for spec in schema.fields:
            if not spec.single_value:
                mv_columns.append(spec.name)
                column_types[spec.name] = pa.string()
            elif spec.data_type in (
                DataType.STRING,
                DataType.JSON,
                DataType.BYTES,
                DataType.BIG_DECIMAL,
            ):
                column_types[spec.name] = pa.string()
    convert = pacsv.ConvertOptions(column_types=column_types, strings_can_be_null=False)
    parse = pacsv.ParseOptions(delimiter=delimiter)
    mv_delim = options.get("multiValueDelimiter", ";")
    with pacsv.open_csv(
        path, read_options=read_opts, parse_options=parse, convert_options=convert
    ) as stream:
        for batch in stream:
            if mv_columns:
                arrays = []
                for name in batch.schema.names:
                    col = batch.column(name)
                    if name in mv_columns:
                        col = pc.split_pattern(col, mv_delim)
                    arrays.append(col)
                batch = pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows)


def records_to_batch(records: list[dict], columns: list[str] | None = None) -> pa.RecordBatch:
    """Python dict records (decoded JSON or Avro, e.g. stream messages) as one record batch,
    keeping every key (transforms may read keys the schema does not have) or only ``columns``.
    A key whose values mix types across records becomes JSON text instead of failing."""
    # Not RecordBatch.from_pylist: it takes the keys of the first record only.
    names = (
        list(columns) if columns is not None else list(dict.fromkeys(k for r in records for k in r))
    )
    return pa.RecordBatch.from_pydict(
        {name: values_to_array([r.get(name) for r in records]) for name in names}
    )


def values_to_array(values: list) -> pa.Array:
    """One column of decoded values as Arrow, its type inferred; values of mixed types become
    JSON text (strings as they are) instead of failing."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(
            [
                None
                if v is None
                else v
                if isinstance(v, str)
                else orjson.dumps(v, default=str).decode()
                for v in values
            ],
            pa.string(),
        )


def _rows_to_batches(
    rows: list[dict], batch_rows: int, schema: Schema | None
) -> Iterator[pa.RecordBatch]:
    for start in range(0, len(rows), batch_rows):
        yield records_to_batch(rows[start : start + batch_rows])


def _read_json(
    path: Path, options: dict, schema: Schema | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith(b"["):
        try:
            rows = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise IngestError(f"invalid JSON array: {exc}", source=str(path)) from exc
        bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
        if bad is not None:
            raise IngestError("a JSON record must be an object", row=bad, source=str(path))
        yield from _rows_to_batches(rows, batch_rows, schema)
        return
    # JSON lines. orjson per line keeps memory bounded and gives the failing line's position.
    rows: list[dict] = []
    row = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise IngestError(f"invalid JSON: {exc}", row=row, source=str(path)) from exc
            if not isinstance(record, dict):
                raise IngestError("a JSON record must be an object", row=row, source=str(path))
            rows.append(record)
            row += 1
            if len(rows) >= batch_rows:
                yield from _rows_to_batches(rows, batch_rows, schema)
                rows = []
    if rows:
        yield from _rows_to_batches(rows, batch_rows, schema)


def _read_avro(
    path: Path, options: dict, schema: Schema | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    import fastavro

    with open(path, "rb") as fh:
        try:
            reader = fastavro.reader(fh)
        except (ValueError, EOFError, fastavro.read.SchemaResolutionError) as exc:
            raise IngestError(f"not an Avro file: {exc}", source=str(path)) from exc
        rows: list[dict] = []
        row = 0
        try:
            for record in reader:
                rows.append(record)
                row += 1
                if len(rows) >= batch_rows:
                    yield from _rows_to_batches(rows, batch_rows, schema)
                    rows = []
        except (ValueError, EOFError, StopIteration) as exc:
            raise IngestError(f"corrupt Avro data: {exc}", row=row, source=str(path)) from exc
        if rows:
            yield from _rows_to_batches(rows, batch_rows, schema)


def _read_parquet(
    path: Path, options: dict, schema: Schema | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise IngestError(f"not a Parquet file: {exc}", source=str(path)) from exc
    columns = None
    if schema is not None:
        columns = [c for c in schema.columns if c in pf.schema_arrow.names] or None
    yield from pf.iter_batches(batch_size=batch_rows, columns=columns)
