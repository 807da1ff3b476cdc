"""The segment's data file: every buffer of every column and index lives in one file,
``columns.psf``, located through ``index_map.json`` (key -> offset, size, and for arrays the
dtype and shape), as in Pinot's v3 layout. One file keeps packing, copying and opening cheap;
readers memory-map it once per segment and take zero-copy views.

Keys are ``<file prefix>.<buffer>`` (e.g. ``c3.fwd``, ``c3.inv.off``, ``startree0.nodes``).
"""

from __future__ import annotations

import contextlib
import functools
import io
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from engine.common.errors import SegmentError

METADATA_FILE = "metadata.json"
CREATION_META_FILE = "creation.meta"
PROPERTIES_FILE = "metadata.properties"  # Pinot-style view of metadata.json, for people
DATA_FILE = "columns.psf"
INDEX_MAP_FILE = "index_map.json"
RAW_CHUNK_ROWS = 65_536  # rows per zstd-compressed record batch of a raw variable-width column
_ALIGN = 64


class BufferWriter:
    """Appends buffers to ``columns.psf``; ``close()`` writes the index map."""

    def __init__(self, seg_dir: Path):
        self._dir = seg_dir
        self._out = open(seg_dir / DATA_FILE, "wb")  # noqa: SIM115 - closed in close()
        self._pos = 0
        self._index: dict[str, dict] = {}

    @classmethod
    def append_to(cls, seg_dir: Path) -> BufferWriter:
        """A writer that adds buffers to an existing segment's data file (a reload adding
        columns to a copy of the segment); ``close()`` rewrites the index map."""
        writer = cls.__new__(cls)
        writer._dir = seg_dir
        writer._index = BufferReader(seg_dir)._index
        writer._out = open(seg_dir / DATA_FILE, "ab")  # noqa: SIM115 - closed in close()
        writer._pos = writer._out.tell()
        return writer

    def _begin(self, key: str) -> int:
        if key in self._index:
            raise SegmentError(f"buffer {key!r} written twice")
        pad = -self._pos % _ALIGN  # aligned so numpy views of any dtype are aligned
        if pad:
            self._out.write(b"\0" * pad)
            self._pos += pad
        return self._pos

    def put_bytes(self, key: str, data: bytes | memoryview) -> None:
        start = self._begin(key)
        self._out.write(data)
        self._pos += len(data)
        self._index[key] = {"offset": start, "size": len(data)}

    def put_array(self, key: str, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        self.put_bytes(key, array.data.cast("B") if array.size else b"")
        self._index[key]["dtype"] = np.lib.format.dtype_to_descr(array.dtype)
        self._index[key]["shape"] = list(array.shape)

    def put_json(self, key: str, value: object) -> None:
        self.put_bytes(key, orjson.dumps(value))

    def put_arrow(self, key: str, array: pa.Array, *, compressed: bool) -> None:
        """One column as an Arrow IPC file; compressed ones hold zstd record batches of
        RAW_CHUNK_ROWS rows, so a reader can decompress one chunk at a time."""
        schema = pa.schema([("v", array.type)])
        options = pa.ipc.IpcWriteOptions(compression="zstd" if compressed else None)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, schema, options=options) as writer:
            step = RAW_CHUNK_ROWS if compressed else max(len(array), 1)
            for start in range(0, max(len(array), 1), step):
                writer.write_batch(pa.record_batch([array.slice(start, step)], schema=schema))
        self.put_bytes(key, sink.getvalue())

    @contextlib.contextmanager
    def stream(self, key: str):
        """Write one buffer in pieces: ``with w.stream(key) as out: out.write(...)``."""
        start = self._begin(key)
        counter = _CountingWriter(self._out)
        yield counter
        self._pos += counter.count
        self._index[key] = {"offset": start, "size": counter.count}

    def close(self) -> None:
        self._out.close()
        (self._dir / INDEX_MAP_FILE).write_bytes(orjson.dumps(self._index))

    def abort(self) -> None:
        self._out.close()


class _CountingWriter(io.RawIOBase):
    def __init__(self, out):
        self._out = out
        self.count = 0

    def write(self, data) -> int:
        n = self._out.write(data)
        self.count += n
        return n


class BufferReader:
    """Zero-copy access to a segment's buffers; the data file is mapped on first use."""

    def __init__(self, seg_dir: Path):
        self._dir = seg_dir
        try:
            self._index: dict[str, dict] = orjson.loads((seg_dir / INDEX_MAP_FILE).read_bytes())
        except FileNotFoundError:
            raise SegmentError(f"{seg_dir} is not a segment: {INDEX_MAP_FILE} is missing") from None
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SegmentError(f"{seg_dir / INDEX_MAP_FILE} is corrupt: {exc}") from exc

    @functools.cached_property
    def _data(self) -> np.ndarray:
        path = self._dir / DATA_FILE
        try:
            if path.stat().st_size == 0:
                return np.zeros(0, dtype=np.uint8)
            return np.memmap(path, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:
            raise SegmentError(f"cannot map {path}: {exc}") from exc

    def has(self, key: str) -> bool:
        return key in self._index

    def bytes_mapped(self) -> int:
        """Map the data file if it is not yet; its size in bytes."""
        return len(self._data)

    def close(self) -> None:
        """Forget the mapping; the next access maps the file again."""
        self.__dict__.pop("_data", None)

    def _entry(self, key: str) -> dict:
        try:
            return self._index[key]
        except KeyError:
            raise SegmentError(f"segment {self._dir.name} has no buffer {key!r}") from None

    def bytes(self, key: str) -> np.ndarray:
        """The buffer as a read-only uint8 view."""
        entry = self._entry(key)
        view = self._data[entry["offset"] : entry["offset"] + entry["size"]]
        if len(view) != entry["size"]:
            raise SegmentError(f"segment {self._dir.name}: buffer {key!r} is truncated")
        return view

    def array(self, key: str) -> np.ndarray:
        entry = self._entry(key)
        dtype = np.lib.format.descr_to_dtype(entry["dtype"])
        shape = tuple(entry["shape"])
        if entry["size"] == 0:
            return np.zeros(shape, dtype=dtype)
        return self.bytes(key).view(dtype).reshape(shape)

    def json(self, key: str) -> object:
        return orjson.loads(self.bytes(key).tobytes())

    def arrow_reader(self, key: str) -> pa.ipc.RecordBatchFileReader:
        try:
            return pa.ipc.open_file(pa.BufferReader(pa.py_buffer(self.bytes(key))))
        except pa.ArrowInvalid as exc:
            raise SegmentError(
                f"segment {self._dir.name}: buffer {key!r} is corrupt: {exc}"
            ) from exc

    def arrow_column(self, key: str) -> pa.Array:
        """The whole column of an Arrow IPC buffer (zero-copy when uncompressed)."""
        reader = self.arrow_reader(key)
        if reader.num_record_batches == 1:
            return reader.get_batch(0).column(0)
        return pa.concat_arrays(
            [reader.get_batch(i).column(0) for i in range(reader.num_record_batches)]
        )
