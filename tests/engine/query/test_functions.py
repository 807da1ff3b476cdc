"""Transform functions on numpy arrays, against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from engine.common.clock import now_ms
from engine.query.errors import QueryExecutionError, QueryValidationError
from engine.query.evaluate import evaluate
from engine.query.parser import parse_sql

DAY = 86_400_000
# 2014-01-01T00:00:00Z (a Wednesday) and 2014-03-15T13:45:30.250Z
T1, T2 = 1388534400000, 1394891130250


def run(expr_sql: str, **columns):
    expr = parse_sql(f"SELECT {expr_sql} FROM t").select[0].expr
    arrays = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(arrays.values()))) if arrays else 1
    from engine.query.expressions import Identifier

    return evaluate(
        expr, lambda e: arrays.get(e.name) if isinstance(e, Identifier) else None, n
    ).tolist()


def test_arithmetic_is_double():
    assert run("a + b", a=[1, 2], b=[3, 4]) == [4.0, 6.0]
    assert run("a - b * 2", a=[1, 2], b=[3, 4]) == [-5.0, -6.0]
    assert run("a / b", a=[1, 3], b=[2, 0])[0] == 0.5
    assert run("MOD(a, 3)", a=[7, 8]) == [1.0, 2.0]


def test_strings():
    s = np.array(["  Ab ", "xyz"], dtype=object)
    assert run("UPPER(s)", s=s) == ["  AB ", "XYZ"]
    assert run("LOWER(s)", s=s) == ["  ab ", "xyz"]
    assert run("TRIM(s)", s=s) == ["Ab", "xyz"]
    assert run("LENGTH(s)", s=s) == [5, 3]
    assert run("CONCAT(s, s, '-')", s=np.array(["a", "b"], dtype=object)) == ["a-a", "b-b"]
    assert run("CONCAT(s, 'z')", s=np.array(["a", "b"], dtype=object)) == ["az", "bz"]
    # Pinot's substr: 0-based start, exclusive end, -1 = to the end
    assert run("SUBSTR(s, 1, 3)", s=np.array(["abcdef"], dtype=object)) == ["bc"]
    assert run("SUBSTR(s, 2, -1)", s=np.array(["abcdef"], dtype=object)) == ["cdef"]


def test_case_cast_and_predicates():
    assert run(
        "CASE WHEN a > 1 THEN 'big' WHEN a = 1 THEN 'one' ELSE 'small' END", a=[0, 1, 2]
    ) == ["small", "one", "big"]
    assert run("CAST(a AS INT)", a=[1.9, -1.9]) == [1, -1]
    assert run("CAST(a AS STRING)", a=[1, 2]) == ["1", "2"]
    assert run("a BETWEEN 1 AND 2", a=[0, 1, 2, 3]) == [False, True, True, False]
    assert run("s LIKE 'a%'", s=np.array(["ab", "ba"], dtype=object)) == [True, False]
    assert run("REGEXP_LIKE(s, '^b')", s=np.array(["ab", "ba"], dtype=object)) == [False, True]


def test_epoch_conversions():
    assert run("ToEpochSeconds(t)", t=[T2]) == [T2 // 1000]
    assert run("ToEpochMinutes(t)", t=[T2]) == [T2 // 60_000]
    assert run("ToEpochHours(t)", t=[T2]) == [T2 // 3_600_000]
    assert run("ToEpochDays(t)", t=[T2]) == [T2 // DAY]
    assert run("FromEpochDays(d)", d=[16071]) == [16071 * DAY]
    assert run("FromEpochHours(d)", d=[2]) == [7_200_000]
    assert run("FromEpochMinutes(d)", d=[2]) == [120_000]
    assert run("FromEpochSeconds(d)", d=[2]) == [2000]


def test_datetrunc_units():
    assert run("DATETRUNC('DAY', t)", t=[T2]) == [T2 - T2 % DAY]
    assert run("DATETRUNC('hour', t)", t=[T2]) == [T2 - T2 % 3_600_000]
    assert run("DATETRUNC('MONTH', t)", t=[T2]) == [1393632000000]  # 2014-03-01
    assert run("DATETRUNC('YEAR', t)", t=[T2]) == [T1]
    assert run("DATETRUNC('WEEK', t)", t=[T1]) == [T1 - 2 * DAY]  # Monday 2013-12-30
    assert run("DATETRUNC('QUARTER', t)", t=[T2]) == [T1]
    assert run("DATETRUNC('DAY', d, 'DAYS')", d=[16071]) == [16071]


def test_datetimeconvert_and_todatetime():
    assert run(
        "DATETIMECONVERT(t, '1:MILLISECONDS:EPOCH', '1:HOURS:EPOCH', '1:HOURS')", t=[T2]
    ) == [T2 // 3_600_000]
    assert run(
        "DATETIMECONVERT(t, '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', '15:MINUTES')", t=[T2]
    ) == [T2 - T2 % 900_000]
    assert run(
        "DATETIMECONVERT(t, '1:MILLISECONDS:EPOCH', '1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd', '1:DAYS')",
        t=[T2],
    ) == ["2014-03-15"]
    assert run(
        "DATETIMECONVERT(d, '1:DAYS:EPOCH', '1:MILLISECONDS:EPOCH', '1:DAYS')", d=[16071]
    ) == [T1]
    assert run(
        "DATETIMECONVERT(s, '1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd', '1:DAYS:EPOCH', '1:DAYS')",
        s=np.array(["20140101"], dtype=object),
    ) == [16071]
    assert run("ToDateTime(t, 'yyyy-MM-dd HH:mm:ss.SSS')", t=[T2]) == ["2014-03-15 13:45:30.250"]
    assert run("FromDateTime(s, 'yyyy-MM-dd')", s=np.array(["2014-01-01"], dtype=object)) == [T1]


def test_now_and_ago():

    now = now_ms()
    assert abs(run("NOW()")[0] - now) < 5000
    assert abs(run("AGO('PT1H')")[0] - (now - 3_600_000)) < 5000
    assert abs(run("AGO('P2D')")[0] - (now - 2 * DAY)) < 5000
    with pytest.raises(QueryValidationError, match="ISO-8601"):
        run("AGO('yesterday')")


def test_bad_time_arguments_are_validation_errors():
    with pytest.raises(QueryValidationError, match="unit"):
        run("DATETRUNC('FORTNIGHT', t)", t=[T1])
    with pytest.raises(QueryValidationError, match="format"):
        run("DATETIMECONVERT(t, 'bogus', '1:DAYS:EPOCH', '1:DAYS')", t=[T1])


def test_json_extract_scalar_and_timeconvert():
    docs = np.array(
        ['{"a": {"b": [10, 20]}, "s": "x"}', '{"a": {"b": [30]}, "s": "y"}'], dtype=object
    )
    assert run("JSONEXTRACTSCALAR(j, '$.a.b[0]', 'INT')", j=docs) == [10, 30]
    assert run("JSONEXTRACTSCALAR(j, '$.s', 'STRING')", j=docs) == ["x", "y"]
    assert run("JSONEXTRACTSCALAR(j, '$.a.b[1]', 'LONG', -1)", j=docs) == [20, -1]
    assert run("JSONEXTRACTSCALAR(j, '$[''s'']', 'STRING')", j=docs) == ["x", "y"]
    with pytest.raises(QueryExecutionError, match="no scalar"):
        run("JSONEXTRACTSCALAR(j, '$.missing', 'INT')", j=docs)
    with pytest.raises(QueryValidationError, match="JSON path"):
        run("JSONEXTRACTSCALAR(j, 'a.b', 'INT')", j=docs)
    assert run("TIMECONVERT(t, 'MILLISECONDS', 'HOURS')", t=[T2]) == [T2 // 3_600_000]


def test_in_compares_big_decimals_as_numbers():
    """BIG_DECIMAL values are Decimal objects: IN compares them as numbers, not as text."""
    from decimal import Decimal

    values = np.array([Decimal("2.50"), Decimal("-1.25"), Decimal("3")], dtype=object)
    assert run("bd IN (2.5, 3)", bd=values) == [True, False, True]
    assert run("bd NOT IN (-1.25)", bd=values) == [True, False, True]
