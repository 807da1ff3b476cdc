"""Turn key columns into dense group ids without a Python loop per row."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.functions import FunctionArgumentError
from engine.functions.datetime import trunc_buckets, unit_ms
from engine.query.expressions import Expression, Function, Identifier, Literal

# Key spaces up to this size are compacted with bincount instead of a sort.
DENSE_KEY_SPACE = 1 << 24


# Integer columns whose values span at most this many are encoded by offset, not by sorting.
SMALL_INT_RANGE = 1 << 22


def encode_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int64, distinct values) with ``distinct[codes] == values``. ``distinct`` is
    sorted for numbers; it may hold values that do not occur (small integer ranges)."""
    if values.dtype.kind in "iu" and len(values):
        low, high = int(values.min()), int(values.max())
        if high - low < SMALL_INT_RANGE:
            codes = np.subtract(values, low, dtype=np.int64)
            return codes, np.arange(low, high + 1, dtype=values.dtype)
        if high - low < 2**62:
            # time buckets (DATETRUNC, DATETIMECONVERT) are multiples of their granularity:
            # the step comes from a sample and is then checked on every value
            sample = np.subtract(values[:: max(1, len(values) // 1024)], low, dtype=np.int64)
            step = int(np.gcd.reduce(sample))
            if step > 1 and (high - low) // step < SMALL_INT_RANGE:
                codes = np.subtract(values, low, dtype=np.int64)
                # in place: a fresh 8-byte-per-row array costs as much as the division
                # (numpy divides by a scalar fast; % and divmod are slow)
                np.floor_divide(codes, step, out=codes)
                if _decode_exactly(codes, step, low, values):
                    distinct = low + np.arange((high - low) // step + 1, dtype=np.int64) * step
                    return codes, distinct.astype(values.dtype)
    if values.dtype.kind in "iuf" and len(values) > 1 and bool(np.all(values[1:] >= values[:-1])):
        # sorted input (a transform of a sorted dictionary, e.g. DATETRUNC): no sort needed
        change = np.empty(len(values), dtype=bool)
        change[0] = True
        np.not_equal(values[1:], values[:-1], out=change[1:])
        return np.cumsum(change) - 1, values[change]
    if values.dtype == object:
        # a None (CASE without ELSE) is one more distinct value, not a missing code
        encoded = pc.dictionary_encode(pa.array(values), null_encoding="encode")
        dictionary = encoded.dictionary
        distinct = (
            dictionary.to_numpy(zero_copy_only=False)
            if not dictionary.null_count
            else np.array(dictionary.to_pylist(), dtype=object)  # None stays None, not NaN
        )
        return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), distinct
    distinct, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), distinct


def fill_nulls(values: np.ndarray, nulls: np.ndarray | None) -> np.ndarray:
    """``values`` with each NULL row's value replaced by a row's that is not NULL (or a zero
    or empty value when all are), so encoding sees no None and no stray default; the NULL
    rows get their own code afterwards (``with_null_code``)."""
    if nulls is None:
        return values
    present = np.flatnonzero(~nulls)
    if len(present):
        filler = values[present[0]]
    elif values.dtype == object:
        filler = ""
    else:
        filler = np.zeros(1, dtype=values.dtype)[0]
    return (
        np.where(nulls, filler, values) if values.dtype != object else _put(values, nulls, filler)
    )


def _put(values: np.ndarray, mask: np.ndarray, value) -> np.ndarray:
    out = values.copy()
    out[mask] = value
    return out


def with_null_code(
    codes: np.ndarray, distinct: np.ndarray, nulls: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(codes, distinct, NULL mark per distinct value): the NULL rows (``nulls``) get one code
    past the others, whose distinct value is a placeholder marked NULL. Unchanged, with no
    marks, when no row is NULL."""
    if nulls is None or not nulls.any():
        return codes, distinct, None
    card = len(distinct)
    codes = np.where(nulls, card, codes).astype(np.int64, copy=False)
    placeholder = distinct[:1] if card else np.zeros(1, dtype=distinct.dtype)
    marks = np.zeros(card + 1, dtype=bool)
    marks[card] = True
    return codes, np.concatenate([distinct, placeholder]), marks


def _decode_exactly(codes: np.ndarray, step: int, low: int, values: np.ndarray) -> bool:
    """``low + codes * step == values`` for every row, checked in cache-sized slices so no
    row-sized temporary is allocated."""
    chunk = 1 << 16
    buffer = np.empty(min(chunk, len(codes)), dtype=np.int64)
    for start in range(0, len(codes), chunk):
        part = buffer[: min(chunk, len(codes) - start)]
        np.multiply(codes[start : start + chunk], step, out=part)
        part += low
        if not np.array_equal(part, values[start : start + chunk]):
            return False
    return True


def combine_codes(
    codes: list[np.ndarray],
    cards: list[int],
    all_present: bool = False,
    starts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id per row from per-column codes (``0 <= codes[i] < cards[i]``).

    Returns (group id per row, for each group the combined key); the combined key decodes
    back to per-column codes with ``decode_key``. ``all_present`` (one column whose every
    code occurs, like the dictionary ids of a whole segment) skips the pass that finds the
    codes in use.
    """
    n = len(codes[0]) if codes else 0
    space = 1
    for card in cards:
        space *= max(card, 1)
    if space >= 1 << 62:
        stacked = np.stack([c.astype(np.int64) for c in codes], axis=1)
        uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
        # re-encode unique rows into a mixed-radix key is impossible here; return row tuples
        return inverse.reshape(-1), uniq
    if len(codes) == 1:
        key = codes[0].astype(np.intp, copy=False)  # bincount would convert on every call
        if all_present:
            return key, np.arange(space, dtype=np.int64)
    else:
        key = codes[0].astype(np.int64)
        for c, card in zip(codes[1:], cards[1:], strict=True):
            key *= max(card, 1)
            key += c
    if space <= DENSE_KEY_SPACE and space <= 8 * n + 65_536:
        # clustered keys: bincount's increments to one bin in a row wait on each other
        present = np.flatnonzero(
            np.bincount(key if starts is None else key[starts], minlength=space)
        )
        if len(present) == space:  # every key occurs: the key is already dense
            return key, present
        lookup = np.empty(space, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        return lookup[key], present
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1), uniq


# Below this many key changes per row, rows are aggregated run by run (see run_starts).
CLUSTERED_RUNS_PER_ROW = 1 / 64
_SAMPLE_WINDOWS, _SAMPLE_ROWS = 16, 256


def run_starts(key: np.ndarray) -> np.ndarray | None:
    """The first row of each run of equal keys, when the keys come clustered (time buckets
    of rows stored in time order, a column correlated with the sort column); None when they
    do not, which a sample of windows across the rows decides before any full pass.

    Per-row scatter kernels (``np.bincount``, ``ufunc.at``) are slow on clustered keys: each
    row adds into the bin the previous row just wrote, so the additions wait on each other
    (18 ms for 5M rows in 8 runs of days, against 6 ms shuffled). Reducing each run with a
    contiguous ``reduceat`` and then scattering one value per run avoids that."""
    n = len(key)
    if n < _SAMPLE_WINDOWS * _SAMPLE_ROWS * 4:
        return None
    changes = 0
    for start in np.linspace(0, n - _SAMPLE_ROWS, _SAMPLE_WINDOWS).astype(np.int64):
        window = key[start : start + _SAMPLE_ROWS]
        changes += int(np.count_nonzero(window[1:] != window[:-1]))
    if changes > _SAMPLE_WINDOWS * _SAMPLE_ROWS * CLUSTERED_RUNS_PER_ROW:
        return None
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(key[1:], key[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return starts if len(starts) <= n * CLUSTERED_RUNS_PER_ROW else None


def decode_key(group_keys: np.ndarray, cards: list[int]) -> list[np.ndarray]:
    """Per-column codes of each group (inverse of the mixed-radix key in combine_codes)."""
    if group_keys.ndim == 2:
        return [group_keys[:, i] for i in range(group_keys.shape[1])]
    if len(cards) == 1:
        return [group_keys]
    out = []
    rest = group_keys.astype(np.int64)
    for card in reversed(cards):
        out.append(rest % max(card, 1))
        rest //= max(card, 1)
    return out[::-1]


def group_values(
    key_columns: list[np.ndarray], key_nulls: list[np.ndarray | None] | None = None
) -> tuple[np.ndarray, int, list[np.ndarray], list[np.ndarray | None]]:
    """(group id per row, number of groups, key values per group, NULL marks per group of
    each key or None) for value columns; ``key_nulls`` marks NULL rows of each column."""
    key_nulls = key_nulls or [None] * len(key_columns)
    if not key_columns or len(key_columns[0]) == 0:
        empty = [np.asarray(k)[:0] for k in key_columns]
        return np.zeros(0, dtype=np.int64), 0, empty, [None] * len(key_columns)
    encoded = [
        with_null_code(*encode_values(fill_nulls(np.asarray(k), n)), n)
        for k, n in zip(key_columns, key_nulls, strict=True)
    ]
    codes = [e[0] for e in encoded]
    cards = [len(e[1]) for e in encoded]
    inverse, group_keys = combine_codes(codes, cards)
    per_column = decode_key(group_keys, cards)
    keys = [e[1][c] for e, c in zip(encoded, per_column, strict=True)]
    nulls = [None if e[2] is None else e[2][c] for e, c in zip(encoded, per_column, strict=True)]
    return inverse, len(group_keys), keys, nulls


@dataclass(frozen=True)
class TimeBuckets:
    """``DATETRUNC(unit, column[, inputUnit[, 'UTC'[, outputUnit]]])`` with a fixed-length
    unit: bucket starts are ``phase + k * step`` (ms), so a value's bucket number is one
    subtraction and one division, and the buckets' values need no pass over the rows."""

    column: str
    in_ms: int
    step: int
    phase: int
    out_ms: int

    def codes(self, values: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(bucket number per value, each bucket's DATETRUNC value), or (None, None) when the
        buckets spanned are too many for a dense code (the caller encodes the values)."""
        low = int(values.min()) * self.in_ms
        high = int(values.max()) * self.in_ms
        first = (low - self.phase) // self.step * self.step + self.phase
        count = (high - first) // self.step + 1
        if count > SMALL_INT_RANGE or max(abs(low), abs(high), abs(first)) >= 1 << 62:
            return None, None
        codes = np.empty(len(values), dtype=np.int64)
        if self.in_ms == 1:
            np.subtract(values, first, out=codes, casting="unsafe")
        else:
            np.multiply(values, self.in_ms, out=codes, casting="unsafe")
            codes -= first
        np.floor_divide(codes, self.step, out=codes)
        starts = first + np.arange(count, dtype=np.int64) * self.step
        return codes, starts if self.out_ms == 1 else np.floor_divide(starts, self.out_ms)


def time_buckets(expr: Expression) -> TimeBuckets | None:
    """The fixed-length buckets of a DATETRUNC over a column; None for any other expression
    (other functions, calendar units, time zones, arguments that are not literals)."""
    if not isinstance(expr, Function) or expr.name != "datetrunc" or len(expr.args) < 2:
        return None
    unit, column, *rest = expr.args
    if not isinstance(column, Identifier) or not isinstance(unit, Literal):
        return None
    if not all(isinstance(a, Literal) and isinstance(a.value, str) for a in rest):
        return None
    input_unit, timezone, output_unit = ([a.value for a in rest] + [None, None, None])[:3]
    try:
        linear = trunc_buckets(str(unit.value), timezone or "UTC")
        in_ms = unit_ms(input_unit or "MILLISECONDS")
        out_ms = unit_ms(output_unit or input_unit or "MILLISECONDS")
    except FunctionArgumentError:
        return None  # the general path reports the bad argument
    if linear is None:
        return None
    return TimeBuckets(column.name, in_ms, linear[0], linear[1], out_ms)
