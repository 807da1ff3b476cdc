"""DISTINCTCOUNTHLL(col[, log2m]): Pinot's HyperLogLog, one register array per group.

Pinot keeps a stream-lib ``HyperLogLog`` with ``log2m`` 8 (256 registers) unless told
otherwise, and estimates with the classic HLL formula plus linear counting for small
cardinalities. The same registers and estimator are kept here as a ``(groups, 2**log2m)``
uint8 array, so that everything is vectorised: each distinct (group, value) pair is hashed
once (dictionary ids are bincounted first, so a 5M-row segment with 100k users hashes 100k
values), registers fill with one ``np.maximum.at``, and merging segments or servers is an
element-wise maximum. States travel as one fixed-size binary value of 2**log2m bytes per group.
"""

from __future__ import annotations

import math

import mmh3
import numpy as np
import pyarrow as pa

from engine.query.aggregation.base import AggregationFunction, histogram_from_block
from engine.query.errors import QueryValidationError

DEFAULT_LOG2M = 8  # Pinot's CommonConstants default for DISTINCTCOUNTHLL
MIN_LOG2M, MAX_LOG2M = 4, 16
_SEED = 0x5EED_9001


def hash64(values: np.ndarray) -> np.ndarray:
    """A 64-bit hash per value (uint64). Numbers hash by their int64 / float64 bits, so the
    same value hashes alike in every segment whatever its stored width; text and bytes go
    through MurmurHash3 (mmh3) one distinct value at a time."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        bits = values.astype(np.int64).view(np.uint64)
    elif values.dtype.kind == "f":
        # -0.0 == 0.0 must land in one register; the +0.0 turns -0.0 into 0.0
        bits = (values.astype(np.float64) + 0.0).view(np.uint64)
    else:
        return np.fromiter(
            (mmh3.hash64(_as_bytes(v), _SEED, signed=False)[0] for v in values.tolist()),
            dtype=np.uint64,
            count=len(values),
        )
    return _fmix64(bits ^ np.uint64(_SEED))


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: a bijection whose every output bit depends on every
    input bit, applied to whole arrays (mmh3 hashes one buffer per call, which would cost a
    Python call per value)."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def register_updates(hashes: np.ndarray, log2m: int) -> tuple[np.ndarray, np.ndarray]:
    """(register index, rank) per hash: the top ``log2m`` bits pick the register, the rank
    is 1 + the number of trailing zeros of the other bits (at most 65 - log2m)."""
    index = (hashes >> np.uint64(64 - log2m)).astype(np.int64)
    rest = hashes & np.uint64((1 << (64 - log2m)) - 1)
    lowest = rest & (~rest + np.uint64(1))  # the lowest set bit, a power of two (or 0)
    _, exponent = np.frexp(lowest.astype(np.float64))  # exact: powers of two are floats
    rank = np.where(rest == 0, 65 - log2m, exponent).astype(np.uint8)
    return index, rank


def estimate(registers: np.ndarray) -> np.ndarray:
    """stream-lib's HyperLogLog.cardinality per row of ``registers``: the harmonic-mean
    estimate, or linear counting below 2.5 m while a register is still empty. The hash has
    64 bits, so no large-range correction is needed."""
    m = registers.shape[1]
    alpha = {16: 0.673, 32: 0.697, 64: 0.709}.get(m, 0.7213 / (1 + 1.079 / m))
    raw = alpha * m * m / np.ldexp(1.0, -registers.astype(np.int32)).sum(axis=1)
    zeros = (registers == 0).sum(axis=1)
    with np.errstate(divide="ignore"):
        linear = m * np.log(m / np.maximum(zeros, 1))
    return np.round(np.where((raw <= 2.5 * m) & (zeros > 0), linear, raw)).astype(np.int64)


class DistinctCountHLL(AggregationFunction):
    name = "distinctcounthll"
    result_type = "LONG"
    state_fields = ("registers",)

    def log2m(self) -> int:
        if not self.params:
            return DEFAULT_LOG2M
        value = self.params[0]
        if isinstance(value, bool | str) or not float(value).is_integer():
            raise QueryValidationError(f"DISTINCTCOUNTHLL: log2m must be an integer, got {value}")
        if not MIN_LOG2M <= int(value) <= MAX_LOG2M:
            raise QueryValidationError(
                f"DISTINCTCOUNTHLL: log2m must be in [{MIN_LOG2M}, {MAX_LOG2M}], got {value}"
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
        index, rank = register_updates(hash64(values), log2m)
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
