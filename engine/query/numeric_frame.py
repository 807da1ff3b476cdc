"""A compact frame for results made only of numeric arrays: a JSON header, then each array's
bytes as numpy holds them.

An aggregation over a few segments is a handful of one-value arrays. Writing and reading an
Arrow IPC stream for it cost a server more than running the query on its segments (a dozen
pyarrow calls, each pulling its code back into a cold cache between requests); this frame
costs a ``tobytes`` per array to write and a ``frombuffer`` per array to read.

Layout: ``MAGIC``, the header's length (4 bytes, little-endian), the header (JSON: the
caller's ``meta`` and each array's dtype and length), then each array's bytes, each starting
at a multiple of 8. Every length is checked on reading, so a frame cut anywhere or with bytes
to spare is refused (``ValueError``). An Arrow stream never starts with ``MAGIC``.
"""

from __future__ import annotations

import struct

import numpy as np
import orjson

MAGIC = b"SPRGNUM1"
MEDIA_TYPE = "application/x-sprig-numeric-frame"
_HEAD = struct.Struct("<I")
_ALIGN = 8
NUMERIC_KINDS = "biuf"  # bool, signed, unsigned, float


def is_numeric(array) -> bool:
    """Whether ``array`` can travel in a frame: a numpy array of bools or numbers."""
    return isinstance(array, np.ndarray) and array.dtype.kind in NUMERIC_KINDS


def _pad(size: int) -> int:
    return -size % _ALIGN


def encode(meta: dict, arrays: list[np.ndarray]) -> bytes:
    """The frame of ``meta`` (JSON-serialisable) and ``arrays`` (each ``is_numeric``)."""
    header = orjson.dumps({"meta": meta, "arrays": [[a.dtype.str, len(a)] for a in arrays]})
    parts = [MAGIC, _HEAD.pack(len(header)), header, b"\0" * _pad(len(header))]
    for array in arrays:
        data = np.ascontiguousarray(array).tobytes()
        parts.append(data)
        parts.append(b"\0" * _pad(len(data)))
    return b"".join(parts)


def decode(data: bytes) -> tuple[dict, list[np.ndarray]]:
    """(meta, arrays) of a frame; the arrays are read-only views of ``data``. Raises
    ValueError naming what is wrong."""
    start = len(MAGIC) + _HEAD.size
    if len(data) < start or not data.startswith(MAGIC):
        raise ValueError("not a numeric frame")
    (length,) = _HEAD.unpack_from(data, len(MAGIC))
    if start + length > len(data):
        raise ValueError(f"the frame ends inside its {length}-byte header")
    try:
        header = orjson.loads(data[start : start + length])
        meta, shapes = header["meta"], header["arrays"]
        dtypes = [(np.dtype(kind), int(count)) for kind, count in shapes]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the frame's header is malformed: {err}") from err
    position = start + length + _pad(length)
    arrays = []
    for dtype, count in dtypes:
        if dtype.kind not in NUMERIC_KINDS or count < 0:
            raise ValueError(f"the frame holds an array of {count} {dtype} values")
        size = dtype.itemsize * count
        if position + size > len(data):
            raise ValueError(f"the frame ends inside an array of {count} {dtype} values")
        arrays.append(np.frombuffer(data, dtype=dtype, count=count, offset=position))
        position += size + _pad(size)
    if position != len(data):
        raise ValueError(f"the frame has {len(data) - position} bytes past its last array")
    return meta, arrays
