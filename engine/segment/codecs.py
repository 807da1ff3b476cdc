"""The chunk compression codecs of raw (no-dictionary) forward indexes, by Pinot's names
(``fieldConfigList[].compressionCodec``): ZSTANDARD (zstandard, level 3: Sprig's default),
LZ4 (lz4's block format), SNAPPY (cramjam's raw snappy) and PASS_THROUGH (stored as is).

Each codec compresses one chunk to bytes and decompresses a chunk (a buffer: a slice of the
memory-mapped segment file) back to a buffer the reader views without another copy.
"""

from __future__ import annotations

from collections.abc import Callable

import cramjam
import lz4.block
import zstandard

from engine.common.errors import SegmentError
from engine.spi.compression import LZ4, PASS_THROUGH, SNAPPY, ZSTANDARD

DEFAULT_CODEC = ZSTANDARD
_ZSTD_LEVEL = 3


def _zstd_compress(data) -> bytes:
    return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(data)


def _zstd_decompress(blob):
    return zstandard.ZstdDecompressor().decompress(blob)


def _lz4_compress(data) -> bytes:
    return lz4.block.compress(data, store_size=True)


def _lz4_decompress(blob):
    return lz4.block.decompress(blob)


def _snappy_compress(data) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


def _snappy_decompress(blob):
    return cramjam.snappy.decompress_raw(bytes(blob))


def _pass_compress(data) -> bytes:
    return bytes(data)


def _pass_decompress(blob):
    return blob


_CODECS: dict[str, tuple[Callable, Callable]] = {
    ZSTANDARD: (_zstd_compress, _zstd_decompress),
    LZ4: (_lz4_compress, _lz4_decompress),
    SNAPPY: (_snappy_compress, _snappy_decompress),
    PASS_THROUGH: (_pass_compress, _pass_decompress),
}
_ERRORS = (zstandard.ZstdError, lz4.block.LZ4BlockError, cramjam.DecompressionError, ValueError)


def compressor(codec: str) -> Callable:
    """``compress(bytes-like) -> bytes`` of ``codec``."""
    return _codec(codec)[0]


def decompress(codec: str, blob, where: str):
    """``blob`` decompressed (a buffer); SegmentError naming ``where`` when it is corrupt."""
    try:
        return _codec(codec)[1](blob)
    except _ERRORS as exc:
        raise SegmentError(f"{where} is corrupt: {exc}") from exc


def _codec(codec: str) -> tuple[Callable, Callable]:
    found = _CODECS.get(codec)
    if found is None:
        raise SegmentError(f"unknown chunk compression codec {codec!r}")
    return found
