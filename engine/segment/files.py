"""File-level helpers for the segment directory: numpy ``.npy`` arrays and Arrow IPC files,
both opened by memory map so loading a segment reads no column data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.common.errors import SegmentError

METADATA_FILE = "metadata.json"
CREATION_META_FILE = "creation.meta"
RAW_CHUNK_ROWS = 65_536  # rows per zstd-compressed record batch of a raw column


def save_npy(path: Path, array: np.ndarray) -> None:
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def load_npy(path: Path) -> np.ndarray:
    """Memory-map a ``.npy`` file read-only (empty arrays are read normally: mmap needs bytes)."""
    try:
        if os.path.getsize(path) <= 128:
            return np.load(path, allow_pickle=False)
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise SegmentError(f"cannot read {path}: {exc}") from exc


def save_arrow(path: Path, array: pa.Array, *, compressed: bool) -> None:
    """Write one column as an Arrow IPC file. Compressed files hold zstd record batches of
    RAW_CHUNK_ROWS rows, so a reader can decompress one chunk at a time."""
    schema = pa.schema([("v", array.type)])
    options = pa.ipc.IpcWriteOptions(compression="zstd" if compressed else None)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema, options=options) as w:
        if compressed:
            for start in range(0, max(len(array), 1), RAW_CHUNK_ROWS):
                w.write_batch(pa.record_batch([array.slice(start, RAW_CHUNK_ROWS)], schema=schema))
        else:
            w.write_batch(pa.record_batch([array], schema=schema))


def open_arrow(path: Path) -> pa.ipc.RecordBatchFileReader:
    """Open an Arrow IPC file by memory map; only the footer is read here."""
    try:
        return pa.ipc.open_file(pa.memory_map(str(path), "r"))
    except (OSError, pa.ArrowInvalid) as exc:
        raise SegmentError(f"cannot read {path}: {exc}") from exc


def read_arrow_column(path: Path) -> pa.Array:
    """The whole column of an Arrow IPC file (zero-copy when uncompressed)."""
    reader = open_arrow(path)
    if reader.num_record_batches == 1:
        return reader.get_batch(0).column(0)
    return pa.concat_arrays(
        [reader.get_batch(i).column(0) for i in range(reader.num_record_batches)]
    )
