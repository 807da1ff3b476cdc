"""Builds an immutable segment directory from Arrow data.

The build happens in a hidden temp directory next to the destination and is renamed into place
at the end, so a failed build leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import uuid
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.clock import now_ms
from engine.common.errors import EngineError, IngestError, SegmentError
from engine.common.types import DataType
from engine.ingest.coercion import NULL_COLUMN_PREFIX
from engine.ingest.pipeline import prepare_rows
from engine.segment.column_writer import EncodedColumn, write_column, write_null_vector
from engine.segment.dictionary import encode
from engine.segment.files import (
    CREATION_META_FILE,
    METADATA_FILE,
    PROPERTIES_FILE,
    BufferWriter,
)
from engine.segment.index.builder import build_indexes
from engine.segment.metadata import SegmentMetadata
from engine.segment.naming import simple_segment_name, validate_segment_name
from engine.segment.startree.builder import build_star_trees
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


@dataclasses.dataclass
class SegmentBuildResult:
    """``num_rows`` is the segment's doc count; ``num_rows_skipped`` the rows dropped because
    they could not be coerced (each in ``errors`` with its input position); ``num_rows_filtered``
    the rows dropped by ``filterConfig``."""

    path: Path
    name: str
    metadata: SegmentMetadata
    num_rows: int
    num_rows_skipped: int
    errors: list[IngestError]
    num_rows_filtered: int = 0


def _time_range(table: pa.Table, schema: Schema, time_column: str | None):
    """(min, max, unit, min_ms, max_ms) of the time column: in its own unit, and in epoch ms."""
    if not time_column or table.num_rows == 0 or time_column not in table.column_names:
        return None, None, None, None, None
    spec = schema.field(time_column)
    fmt = spec.datetime_format
    col = table.column(time_column).combine_chunks()
    if fmt is None:
        mm = pc.min_max(col)
        return mm["min"].as_py(), mm["max"].as_py(), None, None, None
    if fmt.kind == "SIMPLE_DATE_FORMAT":  # text order is not time order: convert it all
        millis = pc.min_max(fmt.to_millis(col))
        lo_ms, hi_ms = millis["min"].as_py(), millis["max"].as_py()
        return lo_ms, hi_ms, "MILLISECONDS", lo_ms, hi_ms
    mm = pc.min_max(col)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    lo_ms, hi_ms = fmt.to_millis(pa.array([lo, hi], col.type)).to_pylist()
    return lo, hi, fmt.time_unit, lo_ms, hi_ms


def _naming_time(table: pa.Table, time_column: str | None):
    if not time_column or table.num_rows == 0:
        return None, None
    mm = pc.min_max(table.column(time_column))
    return mm["min"].as_py(), mm["max"].as_py()


def segment_crc(seg_dir: Path) -> int:
    """CRC32 over every data file of a segment (names and bytes, in name order)."""
    crc = 0
    for path in sorted(p for p in seg_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(seg_dir).as_posix()
        if rel in (METADATA_FILE, CREATION_META_FILE, PROPERTIES_FILE):
            continue
        crc = zlib.crc32(rel.encode(), crc)
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    return crc


def build_segment(
    data: pa.Table | Iterable[pa.RecordBatch],
    schema: Schema,
    table_config: TableConfig,
    out_dir: str | os.PathLike,
    *,
    segment_name: str | None = None,
    sequence_id: int = 0,
    continue_on_error: bool = False,
    source: str = "input",
    custom_metadata: dict | None = None,
) -> SegmentBuildResult:
    """Build one segment from ``data`` into ``out_dir/<name>/`` and return what was built.

    Applies the table's ingestion transforms and filter, coerces to ``schema``, sorts by the
    table's ``sortedColumn``, and writes dictionaries, forward indexes, the configured indexes
    and star-trees. Rows that cannot be coerced raise IngestError (with the row position)
    unless ``continue_on_error`` (or the table's ``ingestionConfig.continueOnError``) is set.
    The name is ``<table>_<minTime>_<maxTime>_<sequence_id>`` unless ``segment_name`` is given.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keep_going = continue_on_error or table_config.ingestion_config.continue_on_error
    prepared = prepare_rows(data, schema, table_config, continue_on_error=keep_going, source=source)
    table = prepared.table
    sorted_col = table_config.sorted_column
    if sorted_col and table.num_rows > 1:
        # Sort on dictionary ids (small ints, radix-sorted) rather than on the values.
        _, ids = encode(table.column(sorted_col).combine_chunks())
        if np.any(ids[1:] < ids[:-1]):
            table = table.take(pa.array(np.argsort(ids, kind="stable")))

    time_column = table_config.time_column_name
    name_min, name_max = _naming_time(table, time_column)
    name = validate_segment_name(
        segment_name
        or simple_segment_name(table_config.table_name, name_min, name_max, sequence_id)
    )
    final = out_dir / name
    if final.exists():
        raise SegmentError(f"segment directory {final} already exists")
    tmp = out_dir / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        metadata = _write_segment(
            tmp, name, table, schema, table_config, time_column, custom_metadata
        )
        os.rename(tmp, final)
    except EngineError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, Exception):
            raise SegmentError(f"building segment {name} failed: {exc}") from exc
        raise
    return SegmentBuildResult(
        path=final,
        name=name,
        metadata=metadata,
        num_rows=table.num_rows,
        num_rows_skipped=len(prepared.errors),
        errors=prepared.errors,
        num_rows_filtered=prepared.num_filtered,
    )


def _write_segment(
    seg_dir: Path,
    name: str,
    table: pa.Table,
    schema: Schema,
    table_config: TableConfig,
    time_column: str | None,
    custom_metadata: dict | None,
) -> SegmentMetadata:
    no_dict = set(table_config.no_dictionary_columns)
    codecs = table_config.compression_codecs
    encoded: dict[str, EncodedColumn] = {}
    writer = BufferWriter(seg_dir)
    try:
        for i, spec in enumerate(schema.fields):
            encoded[spec.name] = write_column(
                spec, table.column(spec.name), writer, f"c{i}", raw=spec.name in no_dict,
                codec=codecs.get(spec.name),
            )  # fmt: skip
            nulls = NULL_COLUMN_PREFIX + spec.name
            if nulls in table.column_names:
                write_null_vector(writer, encoded[spec.name].metadata, table.column(nulls))
        build_indexes(encoded, table_config, writer, table.num_rows)
        star_trees = build_star_trees(encoded, schema, table_config, writer, table.num_rows)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    start, end, unit, start_ms, end_ms = _time_range(table, schema, time_column)
    spec = schema.field(time_column) if time_column and schema.has_column(time_column) else None
    if spec is not None and spec.data_type is DataType.TIMESTAMP:
        unit = "MILLISECONDS"
    metadata = SegmentMetadata(
        segment_name=name,
        table_name=table_config.table_name_with_type,
        total_docs=table.num_rows,
        crc=segment_crc(seg_dir),
        creation_time=now_ms(),
        columns={n: e.metadata for n, e in encoded.items()},
        time_column=time_column,
        time_unit=unit,
        start_time=start,
        end_time=end,
        start_time_ms=start_ms,
        end_time_ms=end_ms,
        star_trees=star_trees,
        custom=dict(custom_metadata or {}),
    )
    (seg_dir / METADATA_FILE).write_bytes(
        orjson.dumps(metadata.to_json(), option=orjson.OPT_INDENT_2)
    )
    (seg_dir / PROPERTIES_FILE).write_text(
        "".join(f"{k} = {v}\n" for k, v in metadata.to_pinot_properties().items())
    )
    (seg_dir / CREATION_META_FILE).write_bytes(
        orjson.dumps({"crc": metadata.crc, "creationTime": metadata.creation_time})
    )
    return metadata
