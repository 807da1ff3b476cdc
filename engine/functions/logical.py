"""Comparisons, connectives, pattern matches, CAST and CASE. Text compares as text; anything
else compares as numbers (Pinot's ``equals(double, double)``)."""

from __future__ import annotations

import decimal
import functools

import numpy as np
import pyarrow.compute as pc

from engine.functions.registry import FunctionArgumentError, register
from engine.functions.values import answer_like, arrow_strings, as_float, as_object, is_stringy

_BOOL = "BOOLEAN"


def _cmp(op):
    def impl(a, b):
        if is_stringy(a) or is_stringy(b):
            return op(as_object(a), as_object(b))
        if isinstance(a, np.ndarray) and isinstance(b, int | float) and not isinstance(b, bool):
            return op(a, b)  # numpy compares numbers of mixed kinds exactly, without a copy
        return op(as_float(a), as_float(b))

    return impl


register("equals", 2, 2, _BOOL)(_cmp(np.equal))
register("not_equals", 2, 2, _BOOL)(_cmp(np.not_equal))
register("less_than", 2, 2, _BOOL)(_cmp(np.less))
register(("less_than_or_equal", "lte"), 2, 2, _BOOL)(_cmp(np.less_equal))
register("greater_than", 2, 2, _BOOL)(_cmp(np.greater))
register(("greater_than_or_equal", "gte"), 2, 2, _BOOL)(_cmp(np.greater_equal))


@register("between", 3, 3, _BOOL)
def between(a, lo, hi):
    return np.logical_and(_cmp(np.greater_equal)(a, lo), _cmp(np.less_equal)(a, hi))


@register("in", 2, 10_000_000, _BOOL)
def in_(a, *values):
    if is_stringy(a) and not _decimals(a):
        return np.isin(as_object(a), np.array([str(v) for v in values], dtype=object))
    return np.isin(as_float(a), np.array([as_float(v) for v in values]))


@register("not_in", 2, 10_000_000, _BOOL)
def not_in(a, *values):
    return np.logical_not(in_(a, *values))


def _decimals(a) -> bool:
    """A BIG_DECIMAL column: an object array of numbers, compared as numbers."""
    return isinstance(a, np.ndarray) and len(a) > 0 and isinstance(a[0], decimal.Decimal)


@register("and", 2, 10_000, _BOOL)
def and_(*args):  # (a scalar argument, e.g. IS NULL of a literal, broadcasts)
    return functools.reduce(np.logical_and, [np.asarray(a, dtype=bool) for a in args])


@register("or", 2, 10_000, _BOOL)
def or_(*args):
    return functools.reduce(np.logical_or, [np.asarray(a, dtype=bool) for a in args])


@register("not", 1, 1, _BOOL)
def not_(a):
    return np.logical_not(a)


@register("like", 2, 2, _BOOL, arrow=True)
def like(a, pattern):
    return answer_like(pc.match_like(arrow_strings(a), str(pattern)), a)


@register("regexp_like", 2, 3, _BOOL, arrow=True)
def regexp_like(a, pattern, flags="c"):
    ignore_case = "i" in str(flags)
    matched = pc.match_substring_regex(arrow_strings(a), str(pattern), ignore_case=ignore_case)
    return answer_like(matched, a)


@register("is_null", 1, 1, _BOOL)
def is_null(a):
    # Functions see no nulls: stored nulls are default values, and ingestion evaluates a
    # call only on rows whose arguments are all present (see engine.ingest.expression).
    return np.zeros(len(a), dtype=bool) if isinstance(a, np.ndarray) else a is None


@register("is_not_null", 1, 1, _BOOL)
def is_not_null(a):
    return np.ones(len(a), dtype=bool) if isinstance(a, np.ndarray) else a is not None


# ---- CAST and CASE ------------------------------------------------------------------------

_CAST_DTYPES = {"INT": np.int32, "LONG": np.int64, "FLOAT": np.float32, "DOUBLE": np.float64,
                "TIMESTAMP": np.int64}  # fmt: skip
# SQL spellings of Pinot's types, for expressions that reach here without the SQL parser
_SQL_TYPES = {"INTEGER": "INT", "BIGINT": "LONG", "SMALLINT": "INT", "TINYINT": "INT",
              "VARCHAR": "STRING", "TEXT": "STRING", "CHAR": "STRING"}  # fmt: skip


def _cast_type(arg_types: list[str]) -> str:
    return "UNKNOWN"  # resolved by the planner from the literal target type


@register("cast", 2, 2, _cast_type)
def cast(a, target):
    target = str(target).upper()
    target = _SQL_TYPES.get(target, target)
    if target in _CAST_DTYPES:
        dtype = _CAST_DTYPES[target]
        values = as_float(a) if is_stringy(a) else a
        if np.issubdtype(dtype, np.integer):
            values = np.trunc(values) if isinstance(values, np.ndarray) else int(values)
        return np.asarray(values).astype(dtype) if isinstance(a, np.ndarray) else dtype(values)
    if target in ("STRING", "JSON"):
        return _format_strings(a)
    if target == "BOOLEAN":
        if is_stringy(a):
            return np.char.lower(np.asarray(a, dtype=str)) == "true"
        return np.asarray(a) != 0
    raise FunctionArgumentError(f"Unsupported CAST target type {target}")


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
        return "STRING"
    if all(t == values[0] for t in values):
        return values[0]
    if any(t == "STRING" for t in values):
        return "STRING"
    if all(t in {"INT", "LONG"} for t in values):
        return "LONG"
    return "DOUBLE"


@register("case", 1, 10_000, _case_type)
def case(*args):
    """CASE WHEN c1 THEN v1 [WHEN c2 THEN v2 ...] ELSE d END; the first true condition wins."""
    conditions = list(args[:-1:2])
    values = list(args[1:-1:2])
    default = args[-1]
    n = next((len(x) for x in args if isinstance(x, np.ndarray)), 1)
    conds = [np.broadcast_to(np.asarray(c, dtype=bool), (n,)) for c in conditions]
    choices = [np.broadcast_to(np.asarray(v), (n,)) for v in values]
    if any(is_stringy(v) for v in [*values, default]):
        choices = [c.astype(object) for c in choices]
        default = np.broadcast_to(np.asarray(default, dtype=object), (n,))
    return np.select(conds, choices, default=default)
