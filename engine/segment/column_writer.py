"""Writes one column of a coerced table: dictionary + forward index (or raw values), with the
column's statistics. Index files are written by ``engine.segment.index``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from engine.common.types import DataType, smallest_uint_dtype
from engine.segment import dictionary as dictionary_mod
from engine.segment.chunked import compress_batches, compress_chunks, write_chunks
from engine.segment.codecs import DEFAULT_CODEC
from engine.segment.files import BufferWriter
from engine.segment.metadata import ColumnMetadata
from engine.spi.schema import FieldSpec


@dataclasses.dataclass
class EncodedColumn:
    """A column as written, kept in memory while the segment's indexes are built.
    ``dict_ids`` is the SV forward index, or the flat MV ids with ``mv_offsets``."""

    spec: FieldSpec
    metadata: ColumnMetadata
    dictionary: pa.Array | None
    dict_ids: np.ndarray | None
    mv_offsets: np.ndarray | None
    raw: pa.Array | None


def _json_value(data_type: DataType, value: object) -> object:
    return data_type.to_json_value(value)


def _dictionary_file_value(data_type: DataType, dictionary: pa.Array) -> np.ndarray | None:
    dtype = data_type.numpy_dtype
    return None if dtype is None else dictionary.to_numpy(zero_copy_only=False).astype(dtype)


def write_column(
    spec: FieldSpec,
    values: pa.Array,
    writer: BufferWriter,
    prefix: str,
    *,
    raw: bool,
    codec: str | None = None,
) -> EncodedColumn:
    """Write ``values`` (coerced, no nulls; a ListArray for MV) as buffers ``<prefix>.*``. A
    raw column's chunks use ``codec`` (Pinot's name; None: ZSTANDARD, Sprig's default)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    num_docs = len(values)
    if spec.single_value:
        flat, offsets = values, None
    else:
        offsets = np.asarray(values.offsets.to_numpy(), dtype=np.int64)
        offsets = offsets - offsets[0]
        flat = values.flatten()
    counts = np.diff(offsets) if offsets is not None else None
    meta = ColumnMetadata(
        name=spec.name,
        data_type=spec.data_type,
        field_type=spec.field_type,
        single_value=spec.single_value,
        cardinality=0,
        min_value=None,
        max_value=None,
        is_sorted=False,
        has_dictionary=not raw,
        total_number_of_entries=len(flat),
        max_num_multi_values=int(counts.max())
        if counts is not None and len(counts)
        else (0 if counts is not None else 1),
        default_null_value=_json_value(spec.data_type, spec.default_null_value),
        file_prefix=prefix,
    )
    if offsets is not None:
        writer.put_array(
            f"{prefix}.mvoff",
            offsets.astype(np.uint32 if len(flat) < 2**32 else np.int64),
        )
    if raw:
        return _write_raw(spec, meta, flat, offsets, writer, prefix, num_docs, codec)
    dictionary, ids = dictionary_mod.encode(flat)
    meta.cardinality = len(dictionary)
    if len(dictionary):
        meta.min_value = _json_value(spec.data_type, dictionary[0].as_py())
        meta.max_value = _json_value(spec.data_type, dictionary[-1].as_py())
    numeric = _dictionary_file_value(spec.data_type, dictionary)
    if numeric is not None:
        writer.put_array(f"{prefix}.dict", numeric)
    else:
        writer.put_arrow(f"{prefix}.dict.arrow", dictionary, compressed=False)
    meta.forward_dtype = ids.dtype.name
    if spec.single_value:
        meta.is_sorted = bool(num_docs < 2 or np.all(ids[1:] >= ids[:-1]))
    if meta.is_sorted:
        # A sorted column needs no per-doc ids: doc ranges per dictionary id are enough.
        starts = np.searchsorted(ids, np.arange(len(dictionary) + 1), side="left")
        writer.put_array(f"{prefix}.sorted", starts.astype(smallest_uint_dtype(num_docs)))
        meta.indexes.append("sorted")
        meta.forward_format = "sorted"
    else:
        meta.forward_format = _write_ids(writer, prefix, ids)
    return EncodedColumn(spec, meta, dictionary, ids, offsets, None)


def _write_ids(writer: BufferWriter, prefix: str, ids: np.ndarray) -> str:
    """Dict ids compress well when the cardinality is far below the id width; keep them
    compressed only when that saves at least a fifth, else leave them memory-mappable."""
    if len(ids) >= 4096:
        header, blobs = compress_chunks(ids)
        if header["offsets"][-1] <= 0.8 * ids.nbytes:
            write_chunks(writer, f"{prefix}.fwd.zst", header, blobs)
            return "zstd"
    writer.put_array(f"{prefix}.fwd", ids)
    return "npy"


def _write_raw(spec, meta, flat, offsets, writer, prefix, num_docs, codec) -> EncodedColumn:
    # Raw columns are stored compressed in chunks, like Pinot's chunk-compressed raw index.
    # ZSTANDARD (the default) keeps the layout of segments written before codecs existed,
    # so servers of either age read them; another codec gets a layout of its own.
    fixed = spec.data_type.is_fixed_width
    if fixed:
        array = flat.to_numpy(zero_copy_only=False).astype(spec.data_type.numpy_dtype, copy=False)
    if codec in (None, DEFAULT_CODEC):
        if fixed:
            write_chunks(writer, f"{prefix}.raw.zst", *compress_chunks(array))
            meta.forward_format = "raw-zstd"
        else:
            writer.put_arrow(f"{prefix}.raw.arrow", flat, compressed=True)
            meta.forward_format = "raw-arrow"
    else:
        header, blobs = (
            compress_chunks(array, codec=codec) if fixed else compress_batches(flat, codec)
        )
        write_chunks(writer, f"{prefix}.raw.chunks", header, blobs)
        meta.forward_format = "raw-chunked"
    meta.compression_codec = codec
    if len(flat) and spec.data_type.is_fixed_width:
        # Sorting a copy gives min, max and an exact distinct count far faster than hashing.
        ordered = np.sort(array)
        meta.min_value = _json_value(spec.data_type, ordered[0].item())
        meta.max_value = _json_value(spec.data_type, ordered[-1].item())
        meta.cardinality = int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1
        if spec.single_value:
            meta.is_sorted = bool(num_docs < 2 or np.all(array[1:] >= array[:-1]))
    elif len(flat):
        ordered = flat.take(pc.sort_indices(flat))
        meta.min_value = _json_value(spec.data_type, ordered[0].as_py())
        meta.max_value = _json_value(spec.data_type, ordered[-1].as_py())
        meta.cardinality = int(pc.count_distinct(flat).as_py())
    return EncodedColumn(spec, meta, None, None, offsets, flat)


def write_null_vector(writer: BufferWriter, meta: ColumnMetadata, is_null: pa.ChunkedArray) -> None:
    """Pinot's null value vector: a bitmap of the docs whose input value was null."""
    docs = np.flatnonzero(is_null.to_numpy()).astype(np.uint32)
    bitmap = BitMap(memoryview(docs))
    bitmap.run_optimize()
    writer.put_bytes(f"{meta.file_prefix}.nullvec", bitmap.serialize())
    meta.indexes.append("nullvec")
