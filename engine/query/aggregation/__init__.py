"""Aggregation functions by Pinot name, including the MV variants (``SUMMV`` ...) and the
``PERCENTILE90(col)`` / ``PERCENTILE(col, 90)`` spellings."""

from __future__ import annotations

import re

from engine.query.aggregation.base import AggregationFunction, ValueBlock
from engine.query.aggregation.basic import Avg, Count, Max, Min, MinMaxRange, Sum
from engine.query.aggregation.histograms import (
    DistinctCount,
    Mode,
    Percentile,
    SegmentPartitionedDistinctCount,
)
from engine.query.aggregation.hll import (
    DistinctCountHLL,
    DistinctCountHLLPlus,
    DistinctCountRawHLL,
)
from engine.query.aggregation.moments import (
    FirstWithTime,
    Kurtosis,
    LastWithTime,
    Skewness,
    StddevPop,
    StddevSamp,
    VarPop,
    VarSamp,
)
from engine.query.aggregation.nullable import with_null_handling
from engine.query.aggregation.sketches import (
    PercentileEst,
    PercentileKLL,
    PercentileTDigest,
)
from engine.query.aggregation.theta import DistinctCountRawThetaSketch, DistinctCountThetaSketch
from engine.query.errors import QueryValidationError
from engine.query.expressions import STAR, Function, Literal

_CLASSES: dict[str, type[AggregationFunction]] = {
    cls.name: cls
    for cls in (Count, Sum, Min, Max, Avg, MinMaxRange, DistinctCount, Percentile, Mode,
                DistinctCountHLL, PercentileEst, PercentileTDigest, PercentileKLL, VarPop, VarSamp,
                StddevPop, StddevSamp, FirstWithTime, LastWithTime, Skewness, Kurtosis,
                DistinctCountRawHLL, DistinctCountHLLPlus, DistinctCountThetaSketch,
                DistinctCountRawThetaSketch, SegmentPartitionedDistinctCount)
}  # fmt: skip
_PERCENTILE_SUFFIX = re.compile(
    r"^(percentile|percentileest|percentiletdigest|percentilekll)(\d+(?:\.\d+)?)$"
)
# the aggregations that take literal parameters after their argument
_PARAMETERIZED = {"distinctcounthll", "distinctcountrawhll", "distinctcounthllplus", "mode",
                  "distinctcountthetasketch", "distinctcountrawthetasketch"}  # fmt: skip
# Pinot names with the same semantics here: DISTINCTCOUNTBITMAP is exact like DISTINCTCOUNT.
_ALIASES = {"distinctcountbitmap": "distinctcount"}


def _split(name: str) -> tuple[str, bool]:
    key = name.lower().replace("_", "")
    if key.endswith("mv") and (key[:-2] in _CLASSES or key[:-2] in _ALIASES):
        return key[:-2], True
    match = _PERCENTILE_SUFFIX.match(key[:-2] if key.endswith("mv") else key)
    if match:
        return key, key.endswith("mv")
    return key, False


def is_aggregation(name: str) -> bool:
    if name == "filter":
        return True
    key, _ = _split(name)
    key = key[:-2] if key.endswith("mv") else key
    return key in _CLASSES or key in _ALIASES or bool(_PERCENTILE_SUFFIX.match(key))


def create_aggregation(call: Function) -> AggregationFunction:
    """Build the aggregation for ``call``; QueryValidationError (700) on a bad call.
    ``FILTER(agg, cond)`` (from ``AGG(...) FILTER (WHERE cond)``) gives ``agg`` with
    ``.filter = cond``; the call (and so the result column) keeps the FILTER."""
    if call.name == "filter":
        inner, condition = call.args
        if (
            not isinstance(inner, Function)
            or inner.name == "filter"
            or not is_aggregation(inner.name)
        ):
            raise QueryValidationError(
                f"FILTER (WHERE ...) must follow an aggregation function, not {inner}"
            )
        fn = create_aggregation(inner)
        fn.call = call
        fn.filter = condition
        return fn
    key, multi_value = _split(call.name)
    base = key[:-2] if key.endswith("mv") else key
    args = list(call.args)
    params: list = []
    match = _PERCENTILE_SUFFIX.match(base)
    if match:
        base, params = match.group(1), [float(match.group(2))]
    base = _ALIASES.get(base, base)
    if base not in _CLASSES:
        raise QueryValidationError(f"Unsupported aggregation function: {call.name.upper()}")
    cls = _CLASSES[base]
    if not args:
        raise QueryValidationError(f"{call.name.upper()} needs an argument")
    if base in ("firstwithtime", "lastwithtime"):
        if len(args) != 3 or not isinstance(args[2], Literal):
            raise QueryValidationError(
                f"{call.name.upper()}(value, time, 'TYPE') takes three arguments"
            )
        fn = cls(call, args[0], (str(args[2].value).upper(),))
        fn.time_argument = args[1]
        return fn
    argument, extra = args[0], args[1:]
    for value in extra:
        if not isinstance(value, Literal):
            raise QueryValidationError(
                f"{call.name.upper()}: extra arguments must be literals, got {value}"
            )
        params.append(value.value)
    if base in {"percentile", "percentileest", "percentiletdigest", "percentilekll"}:
        if not params:
            raise QueryValidationError(
                f"{call.name.upper()} needs a percentile, e.g. {call.name.upper()}(col, 90)"
            )
        if not 0 <= float(params[0]) <= 100:
            raise QueryValidationError(
                f"{call.name.upper()}: percentile must be in [0, 100], got {params[0]}"
            )
    elif extra and base not in _PARAMETERIZED:
        raise QueryValidationError(
            f"{call.name.upper()} takes exactly one argument, got {len(args)}"
        )
    if argument == STAR:
        if base != "count":
            raise QueryValidationError(f"{call.name.upper()}(*) is not supported; only COUNT(*)")
        argument = None
    fn = cls(call, argument, tuple(params))
    fn.multi_value = multi_value
    if base == "count" and not multi_value:
        fn.argument = None  # COUNT(col) == COUNT(*) without null handling
    return fn


__all__ = [
    "AggregationFunction",
    "ValueBlock",
    "create_aggregation",
    "is_aggregation",
    "with_null_handling",
]
