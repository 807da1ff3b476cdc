"""Pinot's ``ArithmeticFunctions``: every operand is read as a double and the result is a
DOUBLE, as in Pinot (``plus(double, double)``), so ``7 / 2`` is 3.5."""

from __future__ import annotations

import numpy as np

from engine.functions.registry import register
from engine.functions.values import as_float, as_long, java_div

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
    """Java's ``a % b`` on doubles: the remainder takes the sign of ``a``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(as_float(a), as_float(b))


@register("least", 2, 2, _DOUBLE)
def least(a, b):
    return np.minimum(as_float(a), as_float(b))


@register("greatest", 2, 2, _DOUBLE)
def greatest(a, b):
    return np.maximum(as_float(a), as_float(b))


@register("abs", 1, 1, _DOUBLE)
def abs_(a):
    return np.abs(as_float(a))


@register(("ceil", "ceiling"), 1, 1, _DOUBLE)
def ceil(a):
    return np.ceil(as_float(a))


@register("floor", 1, 1, _DOUBLE)
def floor(a):
    return np.floor(as_float(a))


@register("exp", 1, 1, _DOUBLE)
def exp(a):
    with np.errstate(over="ignore"):
        return np.exp(as_float(a))


@register(("ln", "log"), 1, 1, _DOUBLE)
def ln(a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(as_float(a))


@register("log2", 1, 1, _DOUBLE)
def log2(a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log2(as_float(a))


@register("log10", 1, 1, _DOUBLE)
def log10(a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(as_float(a))


@register("sqrt", 1, 1, _DOUBLE)
def sqrt(a):
    with np.errstate(invalid="ignore"):
        return np.sqrt(as_float(a))


@register("sign", 1, 1, _DOUBLE)
def sign(a):
    return np.sign(as_float(a))


@register(("power", "pow"), 2, 2, _DOUBLE)
def power(a, b):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.power(as_float(a), as_float(b))


def _half_up(a, scale: int):
    """Round half away from zero at ``scale`` decimals (Java's RoundingMode.HALF_UP)."""
    factor = 10.0**scale
    x = as_float(a) * factor
    return np.copysign(np.floor(np.abs(x) + 0.5), x) / factor


@register("roundDecimal", 1, 2, _DOUBLE)
def round_decimal(a, scale=None):
    """``roundDecimal(a)`` is Java's Math.round (half up); with ``scale``, half away from
    zero at that many decimals."""
    if scale is None:
        return np.floor(as_float(a) + 0.5)
    return _half_up(a, int(scale))


@register("truncate", 1, 2, _DOUBLE)
def truncate(a, scale=0):
    factor = 10.0 ** int(scale)
    return np.trunc(as_float(a) * factor) / factor


def _round_type(arg_types: list[str]) -> str:
    return "LONG" if len(arg_types) == 2 else _DOUBLE


@register("round", 1, 2, _round_type)
def round_(value, round_to_nearest=None):
    """Pinot's ``round(timeValue, roundToNearest)``: ``(value / n) * n`` in long
    arithmetic (truncating toward zero). With one argument, Math.round as roundDecimal."""
    if round_to_nearest is None:
        return round_decimal(value)
    n = int(round_to_nearest)
    return java_div(as_long(value), n) * n
