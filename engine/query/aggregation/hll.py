"""DISTINCTCOUNTHLL(col[, log2m]) and DISTINCTCOUNTRAWHLL: Pinot's HyperLogLog, one register
array per group.

Pinot keeps a stream-lib ``HyperLogLog`` with ``log2m`` 8 (256 registers) unless told
otherwise: each value is hashed with stream-lib's 32-bit MurmurHash 2 (``MurmurHash.hash``:
integers and doubles by their 64 bits, floats by their 32 raw bits, text by its UTF-8
bytes), the top ``log2m`` bits pick a register and the rank of the rest is kept, and the
estimate is the classic HLL formula with linear counting for small cardinalities. The same
hash, registers and estimator are kept here, so estimates and DISTINCTCOUNTRAWHLL's
serialized sketch are Pinot's to the bit; as a ``(groups, 2**log2m)`` uint8 array, so that
everything is vectorised: each distinct (group, value) pair is hashed once (dictionary ids
are bincounted first, so a 5M-row segment with 100k users hashes 100k values), registers
fill with one ``np.maximum.at``, and merging segments or servers is an element-wise
maximum. States travel as one fixed-size binary value of 2**log2m bytes per group.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from engine.query.aggregation.base import AggregationFunction, histogram_from_block
from engine.query.errors import QueryValidationError

DEFAULT_LOG2M = 8  # Pinot's CommonConstants default for DISTINCTCOUNTHLL
MIN_LOG2M, MAX_LOG2M = 1, 16
_M = np.uint32(0x5BD1E995)  # MurmurHash 2's multiplier


def hash32(values: np.ndarray) -> np.ndarray:
    """stream-lib's ``MurmurHash.hash(Object)`` of each value (uint32): integers (any width)
    and doubles through ``hashLong`` of their 64 bits, floats of their raw 32 bits (sign
    extended, as Java widens the int), text and bytes through MurmurHash 2 of their bytes."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return _hash_long(values.astype(np.int64))
    if values.dtype == np.float32:
        return _hash_long(values.view(np.int32).astype(np.int64))
    if values.dtype.kind == "f":
        return _hash_long(values.astype(np.float64).view(np.int64))
    return _hash_bytes([_as_bytes(v) for v in values.tolist()])


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _hash_long(data: np.ndarray) -> np.ndarray:
    """``MurmurHash.hashLong``: its two 32-bit halves mixed (uint32 arithmetic wraps as
    Java's int does)."""
    with np.errstate(over="ignore"):
        low = (data & 0xFFFFFFFF).astype(np.uint32) * _M
        low ^= low >> np.uint32(24)
        h = low * _M
        high = ((data >> 32) & 0xFFFFFFFF).astype(np.uint32) * _M
        high ^= high >> np.uint32(24)
        h = (h * _M) ^ (high * _M)
        return _finish(h)


def _finish(h: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h ^= h >> np.uint32(13)
        h = h * _M
        return h ^ (h >> np.uint32(15))


def _hash_bytes(items: list[bytes]) -> np.ndarray:
    """MurmurHash 2 with seed -1 of each byte string, vectorised over the strings of one
    length at a time (their 4-byte words are columns of one array)."""
    out = np.zeros(len(items), dtype=np.uint32)
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        data = np.frombuffer(b"".join(items[i] for i in rows.tolist()), dtype=np.uint8)
        data = data.reshape(len(rows), length)
        with np.errstate(over="ignore"):
            h = np.full(len(rows), np.uint32((0xFFFFFFFF ^ length) & 0xFFFFFFFF), np.uint32)
            whole = length >> 2
            words = np.ascontiguousarray(data[:, : whole * 4]).view("<u4")
            for i in range(whole):
                k = words[:, i] * _M
                k ^= k >> np.uint32(24)
                h = (h * _M) ^ (k * _M)
            tail = data[:, whole * 4 :].astype(np.int8).astype(np.int32)  # Java bytes: signed
            if tail.shape[1]:
                for j, shift in zip(range(tail.shape[1] - 1, -1, -1), (0, 8, 16), strict=False):
                    h ^= (tail[:, j] << shift).astype(np.uint32)
                h = h * _M
        out[rows] = _finish(h)
    return out


def register_updates(hashes: np.ndarray, log2m: int) -> tuple[np.ndarray, np.ndarray]:
    """(register index, rank) per 32-bit hash, as ``HyperLogLog.offerHashed(int)``: the top
    ``log2m`` bits pick the register, the rank is 1 + the leading zeros of the other bits
    (with a stop bit below them, so at most 33 - log2m)."""
    hashes = hashes.astype(np.uint32)
    index = (hashes >> np.uint32(32 - log2m)).astype(np.int64)
    rest = (hashes << np.uint32(log2m)) | np.uint32((1 << (log2m - 1)) + 1)
    _, bit_length = np.frexp(rest.astype(np.float64))  # exact: 32-bit integers are floats
    return index, (33 - bit_length).astype(np.uint8)


def estimate(registers: np.ndarray) -> np.ndarray:
    """stream-lib's ``HyperLogLog.cardinality`` per row of ``registers``: the harmonic-mean
    estimate, or linear counting up to 2.5 m (while a register is still empty: stream-lib
    would answer Long.MAX_VALUE with none), rounded half up as Java's Math.round."""
    m = registers.shape[1]
    alpha = {16: 0.673, 32: 0.697, 64: 0.709}.get(m, 0.7213 / (1 + 1.079 / m))
    raw = alpha * m * m / np.ldexp(1.0, -registers.astype(np.int32)).sum(axis=1)
    zeros = (registers == 0).sum(axis=1)
    with np.errstate(divide="ignore"):
        linear = m * np.log(m / np.maximum(zeros, 1))
    chosen = np.where((raw <= 2.5 * m) & (zeros > 0), linear, raw)
    return np.floor(chosen + 0.5).astype(np.int64)


def serialized(registers: np.ndarray) -> list[str]:
    """Each row as stream-lib's ``HyperLogLog.getBytes()`` in lower-case hex (Pinot's
    DISTINCTCOUNTRAWHLL): log2m and the byte size as big-endian ints, then the registers
    packed six of 5 bits to a big-endian int word."""
    n, m = registers.shape
    log2m = m.bit_length() - 1
    words = m // 6
    size = 1 if words == 0 else (words if words % 32 == 0 else words + 1)
    padded = np.zeros((n, size * 6), dtype=np.uint32)
    padded[:, :m] = registers
    shifts = np.uint32(5) * np.arange(6, dtype=np.uint32)
    packed = np.bitwise_or.reduce(padded.reshape(n, size, 6) << shifts, axis=2)
    header = np.array([log2m, size * 4], dtype=">u4").tobytes()
    return [(header + row.astype(">u4").tobytes()).hex() for row in packed]


class DistinctCountHLL(AggregationFunction):
    name = "distinctcounthll"
    result_type = "LONG"
    state_fields = ("registers",)

    def log2m(self) -> int:
        if not self.params:
            return DEFAULT_LOG2M
        value = self.params[0]
        name = self.name.upper()
        if isinstance(value, bool | str) or not float(value).is_integer():
            raise QueryValidationError(f"{name}: log2m must be an integer, got {value}")
        if not MIN_LOG2M <= int(value) <= MAX_LOG2M:
            raise QueryValidationError(
                f"{name}: log2m must be in [{MIN_LOG2M}, {MAX_LOG2M}], got {value}"
            )
        return int(value)

    def aggregate(self, block, groups, n_groups):
        log2m = self.log2m()
        registers = np.zeros((n_groups, 1 << log2m), dtype=np.uint8)
        if not block.n_rows:
            return (registers,)
        if groups is None and block.dict_ids is not None and block.whole_segment:
            values, owner = block.dictionary, 0  # every entry occurs: hash them, read no row
        elif groups is None and block.dict_ids is not None:
            # the dictionary values the rows use: a mask write, cheaper than a bincount
            seen = np.zeros(len(block.dictionary), dtype=bool)
            seen[block.dict_ids] = True
            values, owner = block.dictionary[seen], 0
        else:  # one entry per distinct (group, value): each is hashed once
            hist = histogram_from_block(block, groups, n_groups)
            values = hist.values
            owner = np.repeat(np.arange(n_groups, dtype=np.int64), hist.group_sizes())
        index, rank = register_updates(hash32(values), log2m)
        np.maximum.at(registers.reshape(-1), owner * (1 << log2m) + index, rank)
        return (registers,)

    def merge(self, state, groups, n_groups):
        registers = state[0]
        merged = np.zeros((n_groups, registers.shape[1]), dtype=np.uint8)
        np.maximum.at(merged, groups, registers)
        return (merged,)

    def finalize(self, state):
        return estimate(state[0])

    def to_arrow(self, state):
        registers = np.ascontiguousarray(state[0])
        width = registers.shape[1]
        return [
            pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(width), len(registers), [None, pa.py_buffer(registers.tobytes())]
            )
        ]

    def from_arrow(self, columns):
        column = columns[0]
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        width = column.type.byte_width
        if not len(column):
            return (np.zeros((0, width), dtype=np.uint8),)
        if width & (width - 1) or not MIN_LOG2M <= int(math.log2(width)) <= MAX_LOG2M:
            raise QueryValidationError(f"DISTINCTCOUNTHLL: bad register array of {width} bytes")
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        start = column.offset * width
        return (data[start : start + len(column) * width].reshape(len(column), width).copy(),)

    def take(self, state, index):
        return (state[0][index],)

    def concat_states(self, states):
        return (np.concatenate([s[0] for s in states]),)


class DistinctCountRawHLL(DistinctCountHLL):
    """DISTINCTCOUNTRAWHLL(col[, log2m]): the sketch itself, serialized as Pinot does."""

    name = "distinctcountrawhll"
    result_type = "STRING"

    def finalize(self, state):
        return np.array(serialized(state[0]), dtype=object)


class DistinctCountHLLPlus(DistinctCountHLL):
    """DISTINCTCOUNTHLLPLUS(col[, p[, sp]]): Pinot keeps stream-lib's HyperLogLogPlus with
    precision p (14). Here the same HLL with ``log2m = p``: linear counting makes small
    cardinalities exact as HLL++'s sparse mode does; large ones are estimates of the same
    error, not HLL++'s bias-corrected figures."""

    name = "distinctcounthllplus"

    def log2m(self) -> int:
        return super().log2m() if self.params else 14
