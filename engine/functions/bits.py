"""Pinot's bit functions on INT (32-bit) and LONG (64-bit) values, with Java's semantics: a
shift uses the low 5 (int) or 6 (long) bits of its distance, ``>>`` keeps the sign and
``>>>`` (``bitShiftRightUnsigned``, ``bitShiftRightLogical``) shifts zeros in; ``bitMask(n)``
is ``1L << n`` and ``bitExtract(x, n)`` bit n of x, both 0 for n outside [0, 63]."""

from __future__ import annotations

import numpy as np

from engine.functions.registry import register


def _width_type(arg_types: list[str]) -> str:
    return "INT" if all(t == "INT" for t in arg_types[:1]) else "LONG"


def _value(x) -> tuple[np.ndarray, int]:
    """``x`` as an array and its width in bits (32 for int32 input, else 64)."""
    array = np.asarray(x)
    return (array, 32) if array.dtype == np.int32 else (array.astype(np.int64), 64)


@register(("bitShiftRightUnsigned", "bitShiftRightLogical"), 2, 2, _width_type)
def bit_shift_right_unsigned(value, distance):
    array, width = _value(value)
    unsigned = np.uint32 if width == 32 else np.uint64
    shift = (np.asarray(distance).astype(np.int64) & (width - 1)).astype(unsigned)
    out = (array.view(unsigned) if array.ndim else array.astype(unsigned)) >> shift
    return out.astype(array.dtype)


@register("bitMask", 1, 1, "LONG")
def bit_mask(bit):
    bits = np.asarray(bit).astype(np.int64)
    inside = (bits >= 0) & (bits < 64)
    return np.where(inside, np.left_shift(np.int64(1), np.where(inside, bits, 0)), 0)


@register(("bitExtract", "extractBit"), 2, 2, "INT")
def bit_extract(value, bit):
    array = np.asarray(value).astype(np.int64).view(np.uint64)
    bits = np.asarray(bit).astype(np.int64)
    inside = (bits >= 0) & (bits < 64)
    shifted = array >> np.where(inside, bits, 0).astype(np.uint64)
    return np.where(inside, (shifted & np.uint64(1)).astype(np.int32), 0).astype(np.int32)
