"""Spark SQL from task configs is an expression over the table's columns, never a query:
what is allowed comes back as the SQL Spark runs, anything else is refused naming the key
and the offending parts."""

from __future__ import annotations

import pytest

from spark_jobs.minion.sql_expression import ExpressionRefusedError, checked_expression

COLUMNS = {"name", "email", "country", "user_id", "ts", "tags", "Carrier"}
# issue 28's payload: a file read through an aliased subquery, and a static Java method
PAYLOAD = (
    "concat((SELECT first(name) FROM text.`/tmp/sprig/secret.txt` AS t(name)), "
    "reflect('java.lang.System','getProperty','user.name'))"
)


@pytest.mark.parametrize(
    ("sql", "written"),
    [
        ("user_id IN (3, 7)", "user_id IN (3, 7)"),
        ("CASE WHEN country = 'DE' THEN NULL ELSE email END",
         "CASE WHEN country = 'DE' THEN NULL ELSE email END"),
        ("sha2(email, 256)", "SHA2(email, 256)"),
        ("concat(lower(name), '@example.com') || ''", "CONCAT(LOWER(name), '@example.com') || ''"),
        ("nvl(name, 'x')", "COALESCE(name, 'x')"),
        ("hash(name) % 10 = 0 AND ts > 5", "HASH(name) % 10 = 0 AND ts > 5"),
        ("carrier = 'AA' -- a comment", "carrier = 'AA'"),  # Spark resolves names case-blind
        ("element_at(tags, 1) LIKE 'a%'", "ELEMENT_AT(tags, 1) LIKE 'a%'"),
        ("cast(ts AS string)", "CAST(ts AS STRING)"),
    ],
)  # fmt: skip
def test_expressions_over_the_columns_are_allowed(sql, written):
    assert checked_expression("purgeFilter", sql, COLUMNS) == written


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (PAYLOAD, ["a subquery or table", "text.`/tmp/sprig/secret.txt`", "REFLECT"]),
        ("java_method('java.lang.Runtime', 'getRuntime')", ["JAVA_METHOD"]),
        ("try_reflect('java.lang.System', 'exit', 1)", ["TRY_REFLECT"]),
        ("`text`.`/etc/passwd`", ["qualified name"]),
        ("name IN (SELECT name FROM parquet.`/tmp/x`)", ["IN over a query"]),
        ("EXISTS (SELECT 1)", ["subquery"]),
        ("read_files('/etc')", ["READ_FILES"]),
        ("input_file_name()", ["INPUT_FILE_NAME"]),
        ("current_user()", ["CURRENT_USER"]),
        ("first(name)", ["FIRST"]),
        ("row_number() OVER (ORDER BY ts)", ["Window"]),
        ("transform(tags, x -> upper(x))", ["TRANSFORM"]),
        ("explode(tags)", ["EXPLODE"]),
        ("name AS email", ["Alias"]),
        ("concat(name, '${env:AWS_SECRET_ACCESS_KEY}')", ["${"]),
        ("nope + 1", ["unknown column nope"]),
        ("*", ["Star"]),
    ],
)  # fmt: skip
def test_anything_else_is_refused_naming_key_and_parts(sql, named):
    with pytest.raises(ExpressionRefusedError) as refused:
        checked_expression("modify.name", sql, COLUMNS)
    message = str(refused.value)
    assert refused.value.key == "modify.name" and message.startswith(
        "Invalid task config 'modify.name'"
    )
    for part in named:
        assert part in message, message


@pytest.mark.parametrize(
    "sql", ["name FROM t", "name; DROP TABLE t", "name, email", "1 UNION SELECT 2", "concat(", ""]
)
def test_queries_and_broken_text_are_not_an_expression(sql):
    with pytest.raises(ExpressionRefusedError, match=r"modify\.name"):
        checked_expression("modify.name", sql, COLUMNS)


def test_unknown_columns_pass_when_the_schema_is_not_known():
    assert checked_expression("purgeFilter", "whatever = 1", None) == "whatever = 1"
    with pytest.raises(ExpressionRefusedError, match="REFLECT"):
        checked_expression("purgeFilter", "reflect('a', 'b') = 1", None)
