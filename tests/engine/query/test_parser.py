"""SQL text -> ParsedQuery -> QueryPlan, with Pinot's dialect and defaults."""

from __future__ import annotations

import pytest

from engine.query.errors import QueryParseError, QueryValidationError, UnknownColumnError
from engine.query.expressions import Function, Identifier, Literal
from engine.query.parser import parse_sql
from engine.query.plan import ColumnInfo, compile_query

COLUMNS = {
    "a": ColumnInfo("INT"),
    "b": ColumnInfo("LONG"),
    "s": ColumnInfo("STRING"),
    "Month": ColumnInfo("INT"),
    "ts": ColumnInfo("TIMESTAMP"),
    "tags": ColumnInfo("STRING", single_value=False),
}


def test_set_options_explain_and_quoted_identifiers():
    parsed = parse_sql(
        'SET timeoutMs = 500; SET useStarTree=false;\nEXPLAIN PLAN FOR SELECT "Month" FROM t'
    )
    assert parsed.options == {"timeoutMs": "500", "useStarTree": "false"}
    assert parsed.explain
    assert parsed.select[0].expr == Identifier("Month")


def test_limit_forms_and_default_limit():
    assert parse_sql("SELECT a FROM t").limit is None
    assert compile_query("SELECT a FROM t", COLUMNS).limit == 10
    assert (
        parse_sql("SELECT a FROM t LIMIT 5").limit,
        parse_sql("SELECT a FROM t LIMIT 5").offset,
    ) == (5, 0)
    mysql_style = parse_sql("SELECT a FROM t LIMIT 3, 7")
    assert (mysql_style.limit, mysql_style.offset) == (7, 3)
    ansi = parse_sql("SELECT a FROM t LIMIT 7 OFFSET 3")
    assert (ansi.limit, ansi.offset) == (7, 3)


def test_predicates_become_typed_functions():
    where = parse_sql(
        "SELECT a FROM t WHERE a BETWEEN 1 AND 5 AND s NOT IN ('x', 'y') AND s LIKE 'a%' "
        "AND REGEXP_LIKE(s, '^b') AND b IS NOT NULL AND NOT (a = -3) AND a <> 2"
    ).where
    assert where.name == "and"
    names = [arg.name for arg in where.args]
    assert names == [
        "between",
        "not_in",
        "like",
        "regexp_like",
        "is_not_null",
        "not_equals",
        "not_equals",
    ]
    assert where.args[1].args == (Identifier("s"), Literal("x"), Literal("y"))
    assert where.args[5].args == (Identifier("a"), Literal(-3))


def test_case_cast_arithmetic_and_names():
    plan = compile_query(
        "SELECT CASE WHEN a > 1 THEN 'big' ELSE 'small' END, CAST(a AS LONG), a + b * 2, "
        "SUBSTR(s, 0, 2) AS prefix FROM t",
        COLUMNS,
    )
    assert plan.column_names == [
        "case(greater_than(a,1),'big','small')",
        "cast(a,'LONG')",
        "plus(a,times(b,2))",
        "prefix",
    ]
    assert plan.column_types == ["STRING", "LONG", "DOUBLE", "STRING"]


def test_aggregation_plan_types_aliases_having_order():
    plan = compile_query(
        "SELECT s, COUNT(*) AS n, SUM(a), AVG(b), MIN(a), MAX(a), DISTINCTCOUNT(b), "
        "DISTINCTCOUNTHLL(b), PERCENTILE(a, 90), PERCENTILEEST(a, 50), PERCENTILETDIGEST(a, 99), "
        "MINMAXRANGE(a), MODE(a), COUNTMV(tags) FROM t_OFFLINE WHERE a > 0 GROUP BY s "
        "HAVING n > 2 ORDER BY n DESC, s LIMIT 5",
        COLUMNS,
    )
    assert plan.kind == "group_by"
    assert (plan.raw_table, plan.table_type) == ("t", "OFFLINE")
    assert plan.column_types == ["STRING", "LONG", "DOUBLE", "DOUBLE", "DOUBLE", "DOUBLE", "INT",
                                 "LONG", "DOUBLE", "LONG", "DOUBLE", "DOUBLE", "DOUBLE", "LONG"]  # fmt: skip
    count = Function("count", (Identifier("*"),))
    assert plan.having == Function("greater_than", (count, Literal(2)))
    assert plan.order_by[0].expr == count and plan.order_by[0].desc
    assert not plan.order_by[1].desc


def test_distinct_is_a_group_by_without_aggregations():
    plan = compile_query("SELECT DISTINCT s, a FROM t", COLUMNS)
    assert plan.kind == "group_by" and plan.distinct
    assert plan.group_by == [Identifier("s"), Identifier("a")]
    assert plan.aggregations == []


@pytest.mark.parametrize(
    ("sql", "error", "fragment"),
    [
        ("SELECT a FROM", QueryParseError, "line 1"),
        ("SELECT a FROM t WHERE", QueryParseError, "column"),
        ("SELEC a FROM t", QueryParseError, "parsing"),
        ("SELECT a FROM t GROUP BY", QueryParseError, "GROUP BY needs at least one expression"),
        ("SELECT a FROM t WHERE a IN (", QueryParseError, "column 28"),
        ("", QueryParseError, "empty"),
        ("SELECT nope FROM t", UnknownColumnError, "'nope'"),
        ("SELECT a FROM t WHERE zz = 1", UnknownColumnError, "'zz'"),
        ("SELECT FOO(a) FROM t", QueryValidationError, "FOO"),
        ("SELECT SUBSTR(s) FROM t", QueryValidationError, "SUBSTR expects"),
        ("SELECT a, COUNT(*) FROM t", QueryValidationError, "GROUP BY"),
        ("SELECT a FROM t WHERE SUM(a) > 1", QueryValidationError, "WHERE"),
        ("SELECT SUM(s) FROM t", QueryValidationError, "STRING"),
        ("SELECT PERCENTILE(a, 200) FROM t", QueryValidationError, "[0, 100]"),
        ("SELECT SUMMV(a) FROM t", QueryValidationError, "multi-value"),
        ("SELECT SUM(tags) FROM t", QueryValidationError, "SUMMV"),
    ],
)
def test_bad_queries_name_the_problem(sql, error, fragment):
    with pytest.raises(error) as info:
        compile_query(sql, COLUMNS)
    assert fragment in info.value.message


def test_error_codes():
    with pytest.raises(QueryParseError) as parse:
        compile_query("SELECT FROM WHERE", COLUMNS)
    assert parse.value.error_code == 150
    with pytest.raises(UnknownColumnError) as unknown:
        compile_query("SELECT x FROM t", COLUMNS)
    assert unknown.value.error_code == 710


def test_ordinals_in_group_by_and_order_by():
    plan = compile_query("SELECT s, SUM(a) FROM t GROUP BY 1 ORDER BY 2 DESC", COLUMNS)
    assert plan.group_by == [Identifier("s")]
    assert plan.order_by[0].expr == Function("sum", (Identifier("a"),)) and plan.order_by[0].desc
    with pytest.raises(QueryValidationError, match="position 3"):
        compile_query("SELECT s, SUM(a) FROM t GROUP BY s ORDER BY 3", COLUMNS)


def test_null_order_defaults_to_pinots_and_null_forms_are_checked():
    plan = compile_query(
        "SELECT a FROM t ORDER BY a, b DESC, s NULLS FIRST, Month DESC NULLS LAST", COLUMNS
    )
    # NULL sorts as the largest value unless the query says otherwise
    assert [o.nulls_last for o in plan.order_by] == [True, False, False, True]
    plan = compile_query("SELECT COALESCE(a, b), COALESCE(a, NULL), NULLIF(s, 'x') FROM t", COLUMNS)
    assert plan.column_types == ["LONG", "INT", "STRING"]
    for bad in ("COALESCE()", "NULLIF(a)", "NULLIF(a, b, s)"):
        with pytest.raises(QueryValidationError, match=bad.split("(")[0]):
            compile_query(f"SELECT {bad} FROM t", COLUMNS)


def test_semicolons_in_comments_and_quotes_do_not_split_the_request():
    parsed = parse_sql("SET timeoutMs = 5; /* a; b */ SELECT a FROM t -- c; d\n WHERE s = ';'")
    assert parsed.options == {"timeoutMs": "5"}
    assert parsed.table == "t"
