"""The multi-stage engine's SQL front: Pinot's parse-error messages, and the half-typed
clauses sqlglot would read as something else (a JOIN without its condition is a cross product
there) refused as Calcite refuses them."""

from __future__ import annotations

import pytest

from engine.multistage.sql import parse_query, parse_request
from engine.query.errors import QueryParseError


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELECT a FROM t JOIN u", "join requires a condition (NATURAL keyword or ON or USING"),
        ("SELECT a FROM t JOIN u ON", "JOIN u"),
        ("SELECT a FROM t LEFT JOIN u", "LEFT, RIGHT or FULL join requires a condition"),
        ("SELECT a FROM t GROUP BY", "GROUP BY needs at least one expression"),
        ("SELECT a FROM t WHERE a IN (", "Expecting ) at line 1, column 28"),
        ("SELECT CAST(a AS", "Expected TYPE after CAST"),
    ],
)
def test_incomplete_queries_are_parse_errors(sql, fragment):
    with pytest.raises(QueryParseError) as info:
        parse_query(sql)
    assert str(info.value).startswith("Caught exception while parsing query: ")
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t, u",
        "SELECT a FROM t CROSS JOIN u",
        "SELECT a FROM t NATURAL JOIN u",
        "SELECT a FROM t JOIN u USING (a)",
        "SELECT a FROM t JOIN u ON t.a = u.a",
        "SELECT a FROM t CROSS JOIN UNNEST(x) AS v(c)",
    ],
)
def test_joins_that_need_no_condition_or_have_one_parse(sql):
    assert parse_query(sql) is not None


def test_statements_split_outside_comments_and_quotes():
    request = parse_request("SET a = 1; /* ; */ SELECT ';' AS s FROM t -- x; y\n")
    assert request.options == {"a": "1"}
    assert request.tree.sql(comments=False) == "SELECT ';' AS s FROM t"
