"""Turn key columns into dense group ids without a Python loop per row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
        encoded = pc.dictionary_encode(pa.array(values))
        return (
            encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary.to_numpy(zero_copy_only=False),
        )
    distinct, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), distinct


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
    codes: list[np.ndarray], cards: list[int], all_present: bool = False
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
        present = np.flatnonzero(np.bincount(key, minlength=space))
        if len(present) == space:  # every key occurs: the key is already dense
            return key, present
        lookup = np.empty(space, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        return lookup[key], present
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1), uniq


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


def group_values(key_columns: list[np.ndarray]) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """(group id per row, number of groups, key values per group) for value columns."""
    if not key_columns or len(key_columns[0]) == 0:
        return np.zeros(0, dtype=np.int64), 0, [np.asarray(k)[:0] for k in key_columns]
    encoded = [encode_values(np.asarray(k)) for k in key_columns]
    codes = [e[0] for e in encoded]
    cards = [len(e[1]) for e in encoded]
    inverse, group_keys = combine_codes(codes, cards)
    per_column = decode_key(group_keys, cards)
    keys = [e[1][c] for e, c in zip(encoded, per_column, strict=True)]
    return inverse, len(group_keys), keys
