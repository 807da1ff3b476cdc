"""Chunk-compressed fixed-width arrays: zstd per chunk of 65,536 values, with byte shuffling
for integers (each byte plane compresses separately, so small ids cost close to their bit
width). Loading maps the file; a chunk is only decompressed when read.

File layout: 8-byte little-endian header length, a JSON header (dtype, length, chunk rows,
shuffle flag, chunk byte offsets), then the compressed chunks back to back.
"""

from __future__ import annotations

import json

import numpy as np
import zstandard

from engine.common.cancel import checkpoint
from engine.common.errors import SegmentError

CHUNK_ROWS = 65_536
_LEVEL = 3


def _shuffle(chunk: np.ndarray) -> bytes:
    return np.ascontiguousarray(chunk.view(np.uint8).reshape(-1, chunk.itemsize).T).tobytes()


def _unshuffle(raw: bytes, dtype: np.dtype) -> np.ndarray:
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(dtype.itemsize, -1)
    return np.ascontiguousarray(planes.T).view(dtype).ravel()


def compress_chunks(array: np.ndarray, shuffle: bool | None = None) -> tuple[dict, list[bytes]]:
    array = np.ascontiguousarray(array)
    if shuffle is None:
        shuffle = array.dtype.kind in "iub" and array.dtype.itemsize > 1
    compressor = zstandard.ZstdCompressor(level=_LEVEL)
    blobs = []
    for start in range(0, len(array), CHUNK_ROWS):
        chunk = array[start : start + CHUNK_ROWS]
        blobs.append(compressor.compress(_shuffle(chunk) if shuffle else chunk.tobytes()))
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs], dtype=np.int64)]).tolist()
    header = {
        "dtype": array.dtype.str,
        "length": len(array),
        "chunkRows": CHUNK_ROWS,
        "shuffle": bool(shuffle),
        "offsets": offsets,
    }
    return header, blobs


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
    end)`` only the chunks that hold rows ``[start, end)``."""

    def __init__(self, data: np.ndarray, name: str = "chunked array"):
        try:
            self._data = data
            head_len = int.from_bytes(self._data[:8].tobytes(), "little")
            header = json.loads(self._data[8 : 8 + head_len].tobytes())
        except (ValueError, UnicodeDecodeError) as exc:
            raise SegmentError(f"{name} is corrupt: {exc}") from exc
        self._base = 8 + head_len
        self.dtype = np.dtype(header["dtype"])
        self.length = int(header["length"])
        self.chunk_rows = int(header["chunkRows"])
        self._shuffle = bool(header["shuffle"])
        self._offsets = header["offsets"]
        self._path = name

    def __len__(self) -> int:
        return self.length

    @property
    def num_chunks(self) -> int:
        return len(self._offsets) - 1

    def chunk(self, index: int) -> np.ndarray:
        start, end = self._offsets[index], self._offsets[index + 1]
        blob = self._data[self._base + start : self._base + end]
        try:
            raw = zstandard.ZstdDecompressor().decompress(memoryview(blob))
        except zstandard.ZstdError as exc:
            raise SegmentError(f"{self._path} chunk {index} is corrupt: {exc}") from exc
        if self._shuffle:
            return _unshuffle(raw, self.dtype)
        return np.frombuffer(raw, dtype=self.dtype)

    def read_range(self, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` (half-open)."""
        start, end = max(0, start), min(self.length, end)
        if start >= end:
            return np.zeros(0, dtype=self.dtype)
        first, last = start // self.chunk_rows, (end - 1) // self.chunk_rows
        parts = [self.chunk(i) for i in range(first, last + 1)]
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
        offset = first * self.chunk_rows
        return joined[start - offset : end - offset]

    def read(self) -> np.ndarray:
        out = np.empty(self.length, dtype=self.dtype)
        for i in range(self.num_chunks):
            checkpoint()  # a cancelled query stops decompressing a long column
            out[i * self.chunk_rows : (i + 1) * self.chunk_rows] = self.chunk(i)
        return out
