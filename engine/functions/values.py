"""Argument conversions shared by the function modules. Columns are numpy arrays (text as
object arrays); literal arguments are Python scalars."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.functions.registry import FunctionValueError


def as_float(x):
    """Numbers (or numeric text) as float64; FunctionValueError for other text."""
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            try:
                return x.astype(np.float64)
            except (TypeError, ValueError) as err:
                raise FunctionValueError(f"cannot use a string as a number: {err}") from err
        return x.astype(np.float64, copy=False)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError as err:
            raise FunctionValueError(f"cannot use string '{x}' as a number") from err
    return float(x) if x is not None else np.nan


def as_long(x):
    """Numbers as int64 (Java's long): fractions are truncated toward zero."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "iub":
            return x.astype(np.int64, copy=False)
        return np.trunc(as_float(x)).astype(np.int64)
    return int(as_float(x)) if not isinstance(x, int) else x


def java_div(a, d: int):
    """Java's long division ``a / d``: the quotient truncated toward zero."""
    if isinstance(a, np.ndarray):
        if a.size == 0 or (a.min() >= 0 and d > 0):  # the common case: one numpy pass
            return np.floor_divide(a, d)
        q = np.floor_divide(a, d)
        return q + ((q * d != a) & ((a < 0) != (d < 0)))
    q = abs(int(a)) // abs(d)
    return q if (a < 0) == (d < 0) else -q


def is_stringy(x) -> bool:
    return isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype == object)


def as_object(x):
    return x.astype(object) if isinstance(x, np.ndarray) else x


def arrow_strings(x):
    """Text as an Arrow string array (or scalar); other values as Java prints them
    (``true``, ``12``, ``1.5``), the same whether they come as Arrow or numpy."""
    if isinstance(x, pa.Array):
        if pa.types.is_string(x.type):
            return x
        if pa.types.is_boolean(x.type):
            return pc.if_else(x, "true", "false")
        if pa.types.is_integer(x.type):
            return pc.cast(x, pa.string())
        x = x.to_numpy(zero_copy_only=False)
    if isinstance(x, np.ndarray):
        if x.dtype == bool:
            return pa.array(np.where(x, "true", "false"), pa.string())
        return pa.array(x.astype(str) if x.dtype != object else x, type=pa.string())
    if isinstance(x, bool | np.bool_):
        return pa.scalar("true" if x else "false", pa.string())
    return pa.scalar(str(x), type=pa.string())


def to_numpy(arr):
    if isinstance(arr, pa.Scalar):
        return arr.as_py()
    return arr.to_numpy(zero_copy_only=False)


def answer_like(result, *inputs):
    """An Arrow ``result`` as Arrow when any input was Arrow, else as numpy (or a scalar)."""
    if any(isinstance(x, pa.Array) for x in inputs):
        return result
    return to_numpy(result)
