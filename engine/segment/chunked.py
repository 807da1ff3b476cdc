"""Chunk-compressed arrays: 65,536 values per chunk, each compressed with the column's codec
(``engine.segment.codecs``: ZSTANDARD by default, LZ4, SNAPPY, PASS_THROUGH), with byte
shuffling for integers (each byte plane compresses separately, so small ids cost close to
their bit width). Loading maps the file; a chunk is only decompressed when read.

File layout: 8-byte little-endian header length, a JSON header (dtype, length, chunk rows,
shuffle flag, chunk byte offsets, and the codec unless it is ZSTANDARD: files written before
codecs existed have none and read as ZSTANDARD), then the compressed chunks back to back.
Variable-width values (``compress_batches``) keep each chunk as an Arrow IPC stream of one
record batch, compressed the same way (header ``"dtype": "arrow"``).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from engine.common.cancel import checkpoint
from engine.common.errors import SegmentError
from engine.segment import codecs

CHUNK_ROWS = 65_536
ARROW = "arrow"  # the header's dtype of a chunked Arrow column


def _shuffle(chunk: np.ndarray) -> bytes:
    return np.ascontiguousarray(chunk.view(np.uint8).reshape(-1, chunk.itemsize).T).tobytes()


def _unshuffle(raw, dtype: np.dtype) -> np.ndarray:
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(dtype.itemsize, -1)
    return np.ascontiguousarray(planes.T).view(dtype).ravel()


def _header(dtype: str, length: int, shuffle: bool, codec: str, blobs: list[bytes]) -> dict:
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs], dtype=np.int64)]).tolist()
    header = {"dtype": dtype, "length": length, "chunkRows": CHUNK_ROWS, "shuffle": shuffle,
              "offsets": offsets}  # fmt: skip
    if codec != codecs.DEFAULT_CODEC:
        header["codec"] = codec
    return header


def compress_chunks(
    array: np.ndarray, shuffle: bool | None = None, codec: str = codecs.DEFAULT_CODEC
) -> tuple[dict, list[bytes]]:
    array = np.ascontiguousarray(array)
    if shuffle is None:  # shuffling only helps a compressor; PASS_THROUGH stores as is
        shuffle = (
            array.dtype.kind in "iub" and array.dtype.itemsize > 1 and codec != codecs.PASS_THROUGH
        )
    compress = codecs.compressor(codec)
    blobs = []
    for start in range(0, len(array), CHUNK_ROWS):
        chunk = array[start : start + CHUNK_ROWS]
        blobs.append(compress(_shuffle(chunk) if shuffle else chunk.tobytes()))
    return _header(array.dtype.str, len(array), bool(shuffle), codec, blobs), blobs


def compress_batches(values: pa.Array, codec: str) -> tuple[dict, list[bytes]]:
    """A variable-width column (strings, bytes, decimals) in chunks of CHUNK_ROWS rows, each
    an Arrow IPC stream compressed with ``codec``."""
    compress = codecs.compressor(codec)
    schema = pa.schema([("v", values.type)])
    blobs = []
    for start in range(0, max(len(values), 1), CHUNK_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_batch(pa.record_batch([values.slice(start, CHUNK_ROWS)], schema=schema))
        blobs.append(compress(sink.getvalue()))
    return _header(ARROW, len(values), False, codec, blobs), blobs


def write_chunks(writer, key: str, header: dict, blobs: list[bytes]) -> int:
    """Write a compressed array as buffer ``key``; returns its size in bytes."""
    head = json.dumps(header).encode()
    with writer.stream(key) as out:
        out.write(len(head).to_bytes(8, "little"))
        out.write(head)
        for blob in blobs:
            out.write(blob)
    return 8 + len(head) + header["offsets"][-1]


class ChunkedArray:
    """A compressed array on disk. ``read()`` decompresses all of it; ``read_range(start,
    end)`` only the chunks that hold rows ``[start, end)``. A chunked Arrow column
    (``compress_batches``) gives Arrow arrays instead of numpy ones."""

    def __init__(self, data: np.ndarray, name: str = "chunked array"):
        try:
            self._data = data
            head_len = int.from_bytes(self._data[:8].tobytes(), "little")
            header = json.loads(self._data[8 : 8 + head_len].tobytes())
        except (ValueError, UnicodeDecodeError) as exc:
            raise SegmentError(f"{name} is corrupt: {exc}") from exc
        self._base = 8 + head_len
        self.arrow = header["dtype"] == ARROW
        self.dtype = None if self.arrow else np.dtype(header["dtype"])
        self.length = int(header["length"])
        self.chunk_rows = int(header["chunkRows"])
        self._shuffle = bool(header["shuffle"])
        self._offsets = header["offsets"]
        self.codec = header.get("codec", codecs.DEFAULT_CODEC)
        self._path = name

    def __len__(self) -> int:
        return self.length

    @property
    def num_chunks(self) -> int:
        return len(self._offsets) - 1

    def chunk(self, index: int) -> np.ndarray | pa.Array:
        start, end = self._offsets[index], self._offsets[index + 1]
        blob = memoryview(self._data[self._base + start : self._base + end])
        raw = codecs.decompress(self.codec, blob, f"{self._path} chunk {index}")
        if self.arrow:
            try:
                return pa.ipc.open_stream(pa.py_buffer(raw)).read_next_batch().column(0)
            except pa.ArrowInvalid as exc:
                raise SegmentError(f"{self._path} chunk {index} is corrupt: {exc}") from exc
        if self._shuffle:
            return _unshuffle(raw, self.dtype)
        return np.frombuffer(raw, dtype=self.dtype)

    def read_range(self, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` (half-open) of a numeric array."""
        start, end = max(0, start), min(self.length, end)
        if start >= end:
            return np.zeros(0, dtype=self.dtype)
        first, last = start // self.chunk_rows, (end - 1) // self.chunk_rows
        parts = [self.chunk(i) for i in range(first, last + 1)]
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
        offset = first * self.chunk_rows
        return joined[start - offset : end - offset]

    def read(self) -> np.ndarray | pa.Array:
        if self.arrow:
            parts = []
            for i in range(self.num_chunks):
                checkpoint()
                parts.append(self.chunk(i))
            return pa.concat_arrays(parts) if len(parts) != 1 else parts[0]
        out = np.empty(self.length, dtype=self.dtype)
        for i in range(self.num_chunks):
            checkpoint()  # a cancelled query stops decompressing a long column
            out[i * self.chunk_rows : (i + 1) * self.chunk_rows] = self.chunk(i)
        return out
