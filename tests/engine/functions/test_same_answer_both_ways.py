"""Every registered scalar function gives the same answer through an ingestion transform
(``engine.ingest.expression``) and through SQL (``engine.query.evaluate``)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from engine.functions import canonical, function_names, lookup
from engine.functions.sketch import new_theta, theta_text
from engine.ingest.expression import Expression
from engine.query.evaluate import evaluate
from engine.query.expressions import Identifier
from engine.query.parser import parse_sql

COLUMNS = {
    "i": [3, -7, 0, 12, 5],
    "f": [1.5, -2.25, 0.0, 10.75, 3.0],
    "s": ["  Ab c ", "xyz", "b", "Hello", "a-b-c"],
    # 2014-03-15T13:45:30.250Z, 2014-01-01, the epoch, one ms before it, 2021-07-21T06:00Z
    "t": [1394891130250, 1388534400000, 0, -1, 1626847200000],
    "d": ["2014-03-15", "2014-01-01", "1970-01-01", "1969-12-31", "2021-07-21"],
    "j": [
        '{"a": {"b": [1, 2]}, "s": "x", "n": 2.5}',
        '{"a": {"b": [3]}, "s": "y", "n": 1}',
        '{"s": "z", "n": "7"}',
        "{}",
        '{"a": {"b": []}, "s": 1}',
    ],
}


def _theta(*values: int) -> str:
    sketch = new_theta()
    for value in values:
        sketch.update(value)
    return theta_text(sketch)


# Pinot's raw theta sketch text (DISTINCTCOUNTRAWTHETASKETCH's answer), one per row
COLUMNS["k"] = [_theta(1, 2, 3), _theta(), _theta(*range(100)), _theta(7), _theta(2, 3, 4, 5)]
ARROW = {
    "i": pa.array(COLUMNS["i"], pa.int64()),
    "f": pa.array(COLUMNS["f"], pa.float64()),
    "t": pa.array(COLUMNS["t"], pa.int64()),
    **{k: pa.array(COLUMNS[k], pa.string()) for k in ("s", "d", "j", "k")},
}
NUMPY = {
    k: np.asarray(v, dtype=object if isinstance(v[0], str) else None) for k, v in COLUMNS.items()
}

# (the functions a case covers, the expression); syntax forms cover their function names
CASES = [
    ("abs", "abs(f)"), ("plus add", "plus(i, f) + add(f, 1)"), ("minus sub", "minus(i, f) - sub(i, 2)"),
    ("times mult", "times(i, f) * mult(f, 3)"), ("divide", "divide(i, 4) / divide(f, 2)"),
    ("mod moduloormod", "mod(i, 4) + moduloormod(f, 2)"), ("least greatest", "least(i, f) + greatest(i, f)"),
    ("ceil ceiling floor", "ceil(f) + ceiling(f) + floor(f)"), ("exp", "exp(f)"),
    ("ln log log2 log10", "concat(concat(ln(f), log(f)), concat(log2(f), log10(f)))"),
    ("sqrt sign", "sqrt(f) + sign(f)"), ("pow power", "pow(f, 2) + power(i, 3)"),
    ("round", "round(t, 1000)"), ("round", "round(f)"), ("rounddecimal", "roundDecimal(f, 1)"),
    ("truncate", "truncate(f, 1)"),
    ("equals notequals", "equals(i, 3) = notEquals(f, 0)"),
    ("greaterthan greaterthanorequal gte", "greaterThan(i, 0) AND greaterThanOrEqual(f, 0) AND gte(i, 5)"),
    ("lessthan lessthanorequal lte", "lessThan(i, 0) OR lessThanOrEqual(f, 0) OR lte(i, 5)"),
    ("and or not", "(i > 0 AND f > 0) OR NOT (i < 10)"),
    ("between", "i BETWEEN 0 AND 5"), ("in", "i IN (3, 12)"), ("notin", "i NOT IN (3, 12)"),
    ("isnull isnotnull", "s IS NULL OR s IS NOT NULL"), ("like", "s LIKE '%b%'"),
    ("regexplike", "regexp_like(s, '^[a-z]')"),
    ("case", "CASE WHEN i > 0 THEN s WHEN i = 0 THEN 'zero' ELSE 'neg' END"),
    ("cast", "CAST(f AS INT)"), ("cast", "CAST(i AS STRING)"),
    ("concat", "concat(s, 'x', '-')"),
    ("concat", "concat(concat(f, i, '/'), i > 0, '/')"), ("contains endswith startswith",
                                         "concat(concat(contains(s, 'b'), endsWith(s, 'c')), startsWith(s, 'a'))"),
    ("length strlen", "length(s) + strlen(s)"), ("lower upper", "concat(lower(s), upper(s))"),
    ("lpad rpad", "concat(lpad(s, 8, 'xy'), rpad(s, 8, '*'))"),
    ("ltrim rtrim trim", "concat(concat(ltrim(s), rtrim(s), '|'), trim(s), '|')"),
    ("replace reverse", "reverse(replace(s, 'b', 'B'))"), ("strcmp", "strcmp(s, 'b')"),
    ("strpos strrpos", "strpos(s, 'b') * 100 + strrpos(s, 'b')"), ("strpos", "strpos(s, '-', 2)"),
    ("substr substring", "concat(substr(s, 1, 3), substring(s, 0, -1))"),
    *[(f"{p}{u}", f"{p}{u}(t)") for p in ("toEpoch",) for u in ("Seconds", "Minutes", "Hours", "Days")],
    *[(f"toepoch{u}rounded", f"toEpoch{u}Rounded(t, 5)") for u in ("seconds", "minutes", "hours", "days")],
    *[(f"toepoch{u}bucket", f"toEpoch{u}Bucket(t, 5)") for u in ("seconds", "minutes", "hours", "days")],
    *[(f"fromepoch{u}", f"fromEpoch{u}(i)") for u in ("seconds", "minutes", "hours", "days")],
    *[(f"fromepoch{u}bucket", f"fromEpoch{u}Bucket(i, 5)") for u in ("seconds", "minutes", "hours", "days")],
    ("todatetime", "toDateTime(t, 'yyyy-MM-dd''T''HH:mm:ss.SSS')"),
    ("todatetime", "toDateTime(t, 'EEE, d MMM yy h:mm a Z', 'UTC')"),
    ("todatetime", "toDateTime(f, 'yyyy-MM-dd HH:mm:ss.SSS')"),  # a double truncates to a long
    ("fromdatetime", "fromDateTime(d, 'yyyy-MM-dd')"),
    ("fromdatetime", "fromDateTime(d, 'yyyy-MM-dd', 'Europe/Paris')"),
    ("todatetime", "toDateTime(t, 'yyyy-MM-dd HH:mm ZZ', 'America/Los_Angeles')"),
    ("datetrunc", "datetrunc('DAY', t, 'MILLISECONDS', 'America/Los_Angeles')"),
    ("hour", "hour(t, 'Asia/Kolkata')"), ("datetrunc", "datetrunc('MONTH', t)"),
    ("datetimeconvert",
     "datetimeconvert(t, '1:MILLISECONDS:EPOCH', '1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd', '1:DAYS')"),
    ("timeconvert", "timeconvert(t, 'MILLISECONDS', 'HOURS')"),
    ("year month quarter", "year(t) * 100 + month(t) * 10 + quarter(t)"),
    ("week weekofyear yearofweek yow", "week(t) + weekOfYear(t) + yearOfWeek(t) + yow(t)"),
    ("day dayofmonth dayofweek dow dayofyear doy",
     "day(t) + dayOfMonth(t) + dayOfWeek(t) + dow(t) + dayOfYear(t) + doy(t)"),
    ("hour minute second millisecond", "hour(t) + minute(t) + second(t) + millisecond(t)"),
    ("jsonformat jsonpathstring", "concat(jsonFormat(j), jsonPathString(j, '$.s', 'none'))"),
    ("jsonpathlong", "jsonPathLong(j, '$.n', -1)"), ("jsonpathdouble", "jsonPathDouble(j, '$.n')"),
    ("jsonpatharray", "jsonPathArray(j, '$.a.b')"),
    ("jsonextractscalar", "jsonExtractScalar(j, '$.s', 'STRING', 'none')"),
    ("jsonextractkey", "jsonExtractKey(j, '$.*')"),
    ("regexpextract", "regexpExtract(s, '([a-z])-?(b)', 2, 'none')"),
    ("regexplikevar", "regexpLikeVar(s, s)"),
    ("bitshiftrightunsigned bitshiftrightlogical",
     "bitShiftRightUnsigned(i, 1) + bitShiftRightLogical(i, 60)"),
    ("bitmask bitextract extractbit", "bitMask(i) + bitExtract(i, 2) + extractBit(i, 63)"),
    ("stpoint tosphericalgeography", "toSphericalGeography(stPoint(f, i))"),
    ("togeometry", "toGeometry(stPoint(i, f))"),
    ("getthetasketchestimate", "getThetaSketchEstimate(k)"),
    ("thetasketchunion", "getThetaSketchEstimate(thetaSketchUnion(k, thetaSketchDiff(k, k)))"),
    ("thetasketchintersect thetasketchdiff",
     "concat(thetaSketchIntersect(k, k), thetaSketchDiff(k, thetaSketchIntersect(k, k)))"),
]  # fmt: skip
TIME_DEPENDENT = {"now", "ago"}  # read the clock: compared in test_clock_functions_agree


def test_every_function_is_covered():
    covered = {canonical(name) for names, _ in CASES for name in names.split()} | {"div"}
    assert set(function_names()) - TIME_DEPENDENT == covered


def through_sql(text: str) -> list:
    expr = parse_sql(f"SELECT {text} FROM t").select[0].expr
    out = evaluate(expr, lambda e: NUMPY.get(e.name) if isinstance(e, Identifier) else None, 5)
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in np.asarray(out).tolist()]


def through_ingestion(text: str) -> list:
    return Expression(text).evaluate(lambda name: ARROW[name], 5).to_pylist()


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return (a == b and type(a) is type(b)) or (isinstance(a, int | float) and a == b)


@pytest.mark.parametrize(("names", "text"), CASES, ids=[t for _, t in CASES])
def test_same_answer_through_ingestion_and_sql(names, text):
    sql, ingested = through_sql(text), through_ingestion(text)
    assert len(sql) == len(ingested) == 5
    assert all(same(a, b) for a, b in zip(sql, ingested, strict=True)), (sql, ingested)


def test_div_is_an_alias_of_divide():
    # DIV is an operator keyword to sqlglot, so no expression text reaches this alias
    assert lookup("div").impl is lookup("divide").impl


def test_clock_functions_agree():
    now_sql, now_ingested = through_sql("now()")[0], through_ingestion("now()")[0]
    assert abs(now_sql - now_ingested) < 5000
    day = 86_400_000
    assert abs(through_sql("ago('P1D')")[0] - (now_ingested - day)) < 5000
    assert abs(through_ingestion("ago('P1D')")[0] - (now_sql - day)) < 5000


def test_pinot_semantics_on_a_few_values():
    # Java long division truncates toward zero: one ms before the epoch is second 0
    assert through_sql("toEpochSeconds(t)")[3] == 0
    assert through_sql("toDateTime(t, 'yyyy-MM-dd HH:mm:ss.SSS')")[3] == "1969-12-31 23:59:59.999"
    assert (
        through_sql("toDateTime(t, 'EEE, d MMM yy h:mm a Z')")[0] == "Sat, 15 Mar 14 1:45 PM +0000"
    )
    assert through_sql("round(t, 1000)")[0] == 1394891130000  # round(timeValue, roundToNearest)
    assert through_sql("roundDecimal(f, 1)")[1] == -2.3  # half away from zero
    assert through_sql("strpos(s, 'b')")[:3] == [3, -1, 0]
    assert through_sql("strrpos(s, '-')")[4] == 3  # the last one
    assert through_ingestion("strrpos(s, 'l')")[3] == 3
    assert through_sql("jsonPathLong(j, '$.missing')")[0] == -(2**63)  # Long.MIN_VALUE
    assert through_sql("dayOfWeek(t)")[0] == 6  # Saturday; Monday is 1
    # local midnight of 2014-03-15 in Los Angeles (PDT, UTC-7)
    assert through_sql("datetrunc('DAY', t, 'MILLISECONDS', 'America/Los_Angeles')")[0] == (
        1394866800000
    )


def test_ingestion_gives_null_where_an_argument_is_null():
    values = {"t": pa.array([1394891130250, None]), "s": pa.array([None, "x"])}
    out = Expression("concat(toDateTime(t, 'yyyy'), s, '-')").evaluate(values.__getitem__, 2)
    assert out.to_pylist() == [None, None]
    out = Expression("toDateTime(t, 'yyyy')").evaluate(values.__getitem__, 2)
    assert out.to_pylist() == ["2014", None]
