"""Which calls are aggregations, and how the multi-stage engine computes each.

Standard aggregations and the Pinot ones with a SQL equivalent run in the operators
(DataFusion): ``DISTINCTCOUNT(x)`` is ``COUNT(DISTINCT x)``, ``MINMAXRANGE(x)`` is
``MAX(x) - MIN(x)``. The others (percentiles, HLL, theta sketches, ...) exist only in the
single-stage engine: an aggregation over one table that uses them runs there, in the leaf
stage, and its states are merged by the single-stage reduce (``engine.multistage.leaf``).
"""

from __future__ import annotations

from sqlglot import exp

from engine.query.aggregation import is_aggregation

# name (lower case, no underscores) -> the SQL aggregate it is
SQL_AGGREGATES = {
    "count": "COUNT", "sum": "SUM", "min": "MIN", "max": "MAX", "avg": "AVG",
    "booland": "BOOL_AND", "boolor": "BOOL_OR", "stddevpop": "STDDEV_POP",
    "stddevsamp": "STDDEV_SAMP", "varpop": "VAR_POP", "varsamp": "VAR_SAMP",
    "covarpop": "COVAR_POP", "covarsamp": "COVAR_SAMP", "every": "BOOL_AND",
    "anyvalue": "FIRST_VALUE", "listagg": "STRING_AGG", "arrayagg": "ARRAY_AGG",
    "sum0": "SUM",
}  # fmt: skip
DISTINCT_AGGREGATES = {
    "distinctcount": "COUNT", "distinctcountbitmap": "COUNT", "distinctsum": "SUM",
    "distinctavg": "AVG",
}  # fmt: skip
# the aggregations that split into a partial (per worker) and a final step
DECOMPOSABLE = {"COUNT", "SUM", "MIN", "MAX", "AVG", "BOOL_AND", "BOOL_OR"}


def key(name: str) -> str:
    return name.lower().replace("_", "")


def call_name(node: exp.Expression) -> str | None:
    """The function name of a call node as written (lower case), or None."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func) and not isinstance(node, exp.Cast | exp.Case | exp.If):
        return node.sql_name().lower()
    return None


def is_aggregate_call(node: exp.Expression) -> bool:
    """Whether ``node`` is an aggregation call (windowed ones excluded by the caller)."""
    if isinstance(node, exp.Filter):
        return is_aggregate_call(node.this)
    if isinstance(node, exp.WithinGroup):
        return True
    name = call_name(node)
    if name is None:
        return False
    k = key(name)
    return k in SQL_AGGREGATES or k in DISTINCT_AGGREGATES or is_aggregation(name) or k in (
        "minmaxrange", "skewness", "kurtosis", "distinctcounthll", "distinctcounthllplus",
        "distinctcountsmarthll", "distinctcountrawhll", "distinctcountthetasketch",
        "distinctcountrawthetasketch", "sumprecision", "firstwithtime", "lastwithtime",
        "distinctcountcpcsketch", "distinctcountull", "mode", "percentilesmarttdigest",
        "histogram", "idset",
    )  # fmt: skip


def zero_over_no_rows(node: exp.Expression) -> bool:
    """Whether an aggregation over no rows is 0 rather than NULL (the counts, SUM0)."""
    name = call_name(node.this if isinstance(node, exp.Filter) else node)
    k = key(name or "")
    return k == "sum0" or k.startswith(("count", "distinctcount"))


def is_sql_aggregate(node: exp.Expression) -> bool:
    """Whether the operators compute ``node`` (else only the single-stage engine can)."""
    if isinstance(node, exp.Filter):
        return is_sql_aggregate(node.this)
    name = call_name(node)
    if name is None:
        return False
    k = key(name)
    return k in SQL_AGGREGATES or k in DISTINCT_AGGREGATES or k == "minmaxrange"


def aggregate_args(node: exp.Expression) -> list[exp.Expression]:
    call = node.this if isinstance(node, exp.Filter) else node
    if isinstance(call, exp.Anonymous):
        return list(call.expressions)
    return [v for v in call.args.values() if isinstance(v, exp.Expression)]
