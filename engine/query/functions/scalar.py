"""Arithmetic, comparison, string, CAST and CASE transforms on numpy arrays.

Arithmetic returns DOUBLE as Pinot's single-stage engine does. Strings travel as numpy
object arrays; the heavy string work goes through pyarrow.compute.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.query.errors import QueryExecutionError
from engine.query.functions.registry import register


def as_float(x):
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            try:
                return x.astype(np.float64)
            except ValueError as err:
                raise QueryExecutionError(f"cannot use a string as a number: {err}") from err
        return x.astype(np.float64, copy=False)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError as err:
            raise QueryExecutionError(f"cannot use string '{x}' as a number") from err
    return float(x) if x is not None else np.nan


def _strings(x) -> pa.Array:
    if isinstance(x, np.ndarray):
        return pa.array(x.astype(str) if x.dtype != object else x, type=pa.string())
    return pa.scalar(str(x), type=pa.string())


def _to_numpy(arr):
    if isinstance(arr, pa.Scalar):
        return arr.as_py()
    return arr.to_numpy(zero_copy_only=False)


_DOUBLE = "DOUBLE"


@register(("plus", "add"), 2, 2, _DOUBLE)
def plus(a, b):
    return np.add(as_float(a), as_float(b))


@register(("minus", "sub"), 2, 2, _DOUBLE)
def minus(a, b):
    return np.subtract(as_float(a), as_float(b))


@register(("times", "mult"), 2, 2, _DOUBLE)
def times(a, b):
    return np.multiply(as_float(a), as_float(b))


@register(("divide", "div"), 2, 2, _DOUBLE)
def divide(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(as_float(a), as_float(b))


@register(("mod", "moduloormod"), 2, 2, _DOUBLE)
def mod(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(as_float(a), as_float(b))


@register("abs", 1, 1, _DOUBLE)
def abs_(a):
    return np.abs(as_float(a))


@register("ceil", 1, 1, _DOUBLE)
def ceil(a):
    return np.ceil(as_float(a))


@register("floor", 1, 1, _DOUBLE)
def floor(a):
    return np.floor(as_float(a))


@register("sqrt", 1, 1, _DOUBLE)
def sqrt(a):
    with np.errstate(invalid="ignore"):
        return np.sqrt(as_float(a))


@register("ln", 1, 1, _DOUBLE)
def ln(a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(as_float(a))


@register("power", 2, 2, _DOUBLE)
def power(a, b):
    return np.power(as_float(a), as_float(b))


@register("round", 1, 2, _DOUBLE)
def round_(a, scale=0):
    return np.round(as_float(a), int(scale))


# ---- comparisons and connectives, usable in SELECT and HAVING ------------------------------


def _cmp(op):
    def impl(a, b):
        if _is_stringy(a) or _is_stringy(b):
            return op(_obj(a), _obj(b))
        if isinstance(a, np.ndarray) and isinstance(b, int | float) and not isinstance(b, bool):
            return op(a, b)  # numpy compares numbers of mixed kinds exactly, without a copy
        return op(as_float(a), as_float(b))

    return impl


def _is_stringy(x) -> bool:
    return isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype == object)


def _obj(x):
    return x.astype(object) if isinstance(x, np.ndarray) else x


_BOOL = "BOOLEAN"
register("equals", 2, 2, _BOOL)(_cmp(np.equal))
register("not_equals", 2, 2, _BOOL)(_cmp(np.not_equal))
register("less_than", 2, 2, _BOOL)(_cmp(np.less))
register("less_than_or_equal", 2, 2, _BOOL)(_cmp(np.less_equal))
register("greater_than", 2, 2, _BOOL)(_cmp(np.greater))
register("greater_than_or_equal", 2, 2, _BOOL)(_cmp(np.greater_equal))


@register("between", 3, 3, _BOOL)
def between(a, lo, hi):
    return np.logical_and(_cmp(np.greater_equal)(a, lo), _cmp(np.less_equal)(a, hi))


@register("in", 2, 10_000_000, _BOOL)
def in_(a, *values):
    if _is_stringy(a):
        return np.isin(_obj(a), np.array([str(v) for v in values], dtype=object))
    return np.isin(as_float(a), np.array([as_float(v) for v in values]))


@register("not_in", 2, 10_000_000, _BOOL)
def not_in(a, *values):
    return np.logical_not(in_(a, *values))


@register("and", 2, 10_000, _BOOL)
def and_(*args):
    return np.logical_and.reduce([np.asarray(a, dtype=bool) for a in args])


@register("or", 2, 10_000, _BOOL)
def or_(*args):
    return np.logical_or.reduce([np.asarray(a, dtype=bool) for a in args])


@register("not", 1, 1, _BOOL)
def not_(a):
    return np.logical_not(a)


@register("like", 2, 2, _BOOL)
def like(a, pattern):
    return _to_numpy(pc.match_like(_strings(a), str(pattern)))


@register("regexp_like", 2, 3, _BOOL)
def regexp_like(a, pattern, flags="c"):
    ignore_case = "i" in str(flags)
    return _to_numpy(pc.match_substring_regex(_strings(a), str(pattern), ignore_case=ignore_case))


@register("is_null", 1, 1, _BOOL)
def is_null(a):
    # Without null handling every stored value is non-null (nulls became default values).
    return np.zeros(len(a), dtype=bool) if isinstance(a, np.ndarray) else a is None


@register("is_not_null", 1, 1, _BOOL)
def is_not_null(a):
    return np.ones(len(a), dtype=bool) if isinstance(a, np.ndarray) else a is not None


# ---- strings ------------------------------------------------------------------------------

_STRING = "STRING"


@register("upper", 1, 1, _STRING)
def upper(a):
    return _to_numpy(pc.utf8_upper(_strings(a)))


@register("lower", 1, 1, _STRING)
def lower(a):
    return _to_numpy(pc.utf8_lower(_strings(a)))


@register(("substr", "substring"), 2, 3, _STRING)
def substr(a, start, end=-1):
    """Pinot's substr: 0-based ``start`` (inclusive) to ``end`` (exclusive); ``end=-1`` means
    to the end of the string."""
    start, end = int(start), int(end)
    strings = _strings(a)
    if end < 0:
        return _to_numpy(pc.utf8_slice_codeunits(strings, start))
    return _to_numpy(pc.utf8_slice_codeunits(strings, start, end))


@register("concat", 2, 3, _STRING)
def concat(a, b, separator=""):
    return _to_numpy(pc.binary_join_element_wise(_strings(a), _strings(b), str(separator)))


@register("trim", 1, 1, _STRING)
def trim(a):
    return _to_numpy(pc.utf8_trim_whitespace(_strings(a)))


@register("ltrim", 1, 1, _STRING)
def ltrim(a):
    return _to_numpy(pc.utf8_ltrim_whitespace(_strings(a)))


@register("rtrim", 1, 1, _STRING)
def rtrim(a):
    return _to_numpy(pc.utf8_rtrim_whitespace(_strings(a)))


@register("length", 1, 1, "INT")
def length(a):
    result = _to_numpy(pc.utf8_length(_strings(a)))
    return np.asarray(result, dtype=np.int32) if isinstance(result, np.ndarray) else result


@register("reverse", 1, 1, _STRING)
def reverse(a):
    return _to_numpy(pc.utf8_reverse(_strings(a)))


@register("replace", 3, 3, _STRING)
def replace(a, find, substitute):
    return _to_numpy(pc.replace_substring(_strings(a), str(find), str(substitute)))


@register("strpos", 2, 2, "INT")
def strpos(a, find):
    return np.asarray(_to_numpy(pc.find_substring(_strings(a), str(find))), dtype=np.int32)


@register("startswith", 2, 2, _BOOL)
def startswith(a, prefix):
    return _to_numpy(pc.starts_with(_strings(a), str(prefix)))


# ---- CAST and CASE ------------------------------------------------------------------------

_CAST_DTYPES = {"INT": np.int32, "LONG": np.int64, "FLOAT": np.float32, "DOUBLE": np.float64,
                "TIMESTAMP": np.int64}  # fmt: skip


def _cast_type(arg_types: list[str]) -> str:
    return "UNKNOWN"  # resolved by the planner from the literal target type


@register("cast", 2, 2, _cast_type)
def cast(a, target):
    target = str(target).upper()
    if target in _CAST_DTYPES:
        dtype = _CAST_DTYPES[target]
        values = as_float(a) if _is_stringy(a) else a
        if np.issubdtype(dtype, np.integer):
            values = np.trunc(values) if isinstance(values, np.ndarray) else int(values)
        return np.asarray(values).astype(dtype) if isinstance(a, np.ndarray) else dtype(values)
    if target == "STRING":
        return _format_strings(a)
    if target == "BOOLEAN":
        if _is_stringy(a):
            return np.char.lower(np.asarray(a, dtype=str)) == "true"
        return np.asarray(a) != 0
    raise QueryExecutionError(f"Unsupported CAST target type {target}")


def _format_strings(a):
    if not isinstance(a, np.ndarray):
        return str(a)
    if a.dtype == object:
        return a
    if np.issubdtype(a.dtype, np.floating):
        return np.array([repr(float(v)) for v in a], dtype=object)
    return a.astype(str).astype(object)


def _case_type(arg_types: list[str]) -> str:
    values = [t for i, t in enumerate(arg_types) if i % 2 == 1 or i == len(arg_types) - 1]
    values = [t for t in values if t != "NULL"]
    if not values:
        return _STRING
    if all(t == values[0] for t in values):
        return values[0]
    if any(t == _STRING for t in values):
        return _STRING
    if all(t in {"INT", "LONG"} for t in values):
        return "LONG"
    return _DOUBLE


@register("case", 1, 10_000, _case_type)
def case(*args):
    """CASE WHEN c1 THEN v1 [WHEN c2 THEN v2 ...] ELSE d END; the first true condition wins."""
    conditions = list(args[:-1:2])
    values = list(args[1:-1:2])
    default = args[-1]
    n = next((len(x) for x in args if isinstance(x, np.ndarray)), 1)
    conds = [np.broadcast_to(np.asarray(c, dtype=bool), (n,)) for c in conditions]
    choices = [np.broadcast_to(np.asarray(v), (n,)) for v in values]
    if any(_is_stringy(v) for v in [*values, default]):
        choices = [c.astype(object) for c in choices]
        default = np.broadcast_to(np.asarray(default, dtype=object), (n,))
    return np.select(conds, choices, default=default)
