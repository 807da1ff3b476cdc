"""The queries of the null-handling conformance suite (``null_conformance``): each one in
Pinot SQL (``{t}`` is the table) and as DuckDB SQL over ``t_on`` (null handling on) and
``t_off`` (off). The DuckDB side is the Pinot SQL rewritten: Pinot's aggregation names,
multi-value predicates ("any value matches"), and without null handling IS NULL and
COALESCE reading the ``__null`` flags of columns that otherwise hold their defaults.

Shapes: selections of every column with IS [NOT] NULL; ORDER BY every sortable column with
the default and explicit NULLS FIRST/LAST; predicates of every kind (comparisons, IN,
BETWEEN, LIKE, IS NULL, NOT over AND/OR, expressions) on every type, single- and
multi-value; NULL-aware expressions (arithmetic, COALESCE, NULLIF, CASE, AND/OR/NOT);
aggregations (over rows, over none, FILTER, over expressions); GROUP BY with NULL groups,
HAVING and ORDER BY on keys and aggregates; DISTINCT.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from tests.engine.query.conformance import mv_rewrite
from tests.engine.query.null_conformance import DIMENSIONS, METRICS, MV_COLUMNS


@dataclass(frozen=True)
class NullQuery:
    pinot: str
    duck_on: str
    duck_off: str | None  # None: not checked without null handling
    ordered: bool
    aggregations: tuple | None = None  # an aggregation-only query's function per column


_AGGREGATES = {"varpop": "VAR_POP", "stddevpop": "STDDEV_POP", "stddevsamp": "STDDEV_SAMP"}
_MV_AGGREGATES = {
    "summv": "SUM(list_sum({0}))",
    "countmv": "COALESCE(SUM(len({0})), 0)",
    "maxmv": "MAX(list_max({0}))",
    "minmv": "MIN(list_min({0}))",
    "distinctcountmv": "COALESCE(len(list_distinct(flatten(list({0})))), 0)",
}


class _PinotOrder(Dialect):
    """Standard SQL read with Pinot's null order (NULL sorts as the largest value), so the
    DuckDB SQL written from it spells out the NULLS FIRST/LAST that Pinot implies."""

    NULL_ORDERING = "nulls_are_large"


def _reference(sql: str, mode: str) -> str:
    tree = sqlglot.parse_one(sql.format(t="t"), read=_PinotOrder)
    for table in tree.find_all(exp.Table):
        table.set("this", exp.to_identifier(f"t_{mode}"))

    def transform(node):
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            args = [a.sql(dialect="duckdb") for a in node.expressions]
            if name == "distinctcount":
                return sqlglot.parse_one(f"COUNT(DISTINCT {args[0]})", read="duckdb")
            if name == "minmaxrange":
                return sqlglot.parse_one(
                    f"(MAX({args[0]})::DOUBLE - MIN({args[0]})::DOUBLE)", read="duckdb"
                )
            if name in _AGGREGATES:
                return sqlglot.parse_one(f"{_AGGREGATES[name]}({args[0]})", read="duckdb")
            if name in _MV_AGGREGATES:
                return sqlglot.parse_one(_MV_AGGREGATES[name].format(*args), read="duckdb")
        if isinstance(node, exp.Add | exp.Sub | exp.Mul):  # Pinot's arithmetic is DOUBLE
            return node.__class__(
                this=exp.cast(node.this, "DOUBLE"), expression=exp.cast(node.expression, "DOUBLE")
            )
        if mode == "off" and isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            if node.this.find(exp.AggFunc):  # after aggregation no value is NULL
                return exp.false()
            flags = [f"{c.name}__null" for c in node.this.find_all(exp.Column)]
            return sqlglot.parse_one("(" + " OR ".join(flags) + ")")
        if mode == "off" and isinstance(node, exp.Coalesce):
            return _coalesce_off([node.this, *node.expressions])
        if isinstance(node, exp.Not) and isinstance(node.this, exp.In):
            inner = node.this
            if isinstance(inner.this, exp.Column) and inner.this.name in MV_COLUMNS:
                rewritten = mv_rewrite(inner, MV_COLUMNS).sql(dialect="duckdb")
                return sqlglot.parse_one(rewritten.replace("> 0", "= 0"), read="duckdb")
        if isinstance(
            node, exp.In | exp.Between | exp.EQ | exp.NEQ | exp.LT | exp.LTE | exp.GT | exp.GTE
        ):
            return mv_rewrite(node, MV_COLUMNS)
        return node

    return tree.transform(transform, copy=False).sql(dialect="duckdb")


def _coalesce_off(args: list[exp.Expression]) -> exp.Expression:
    """COALESCE over defaults + flags: a column counts as present where its flag is false;
    where none is, the last one's stored value stands (there is no NULL to give)."""
    parts = []
    for arg in args:
        if isinstance(arg, exp.Column):
            parts.append(f"WHEN NOT {arg.name}__null THEN {arg.sql(dialect='duckdb')}")
        else:
            parts.append(f"WHEN TRUE THEN {arg.sql(dialect='duckdb')}")
    last = args[-1].sql(dialect="duckdb")
    return sqlglot.parse_one(f"(CASE {' '.join(parts)} ELSE {last} END)", read="duckdb")


def _query(pinot: str, ordered: bool, *, off: bool = True, aggregations=None) -> NullQuery:
    return NullQuery(
        pinot, _reference(pinot, "on"), _reference(pinot, "off") if off else None, ordered,
        aggregations,
    )  # fmt: skip


# ---- the shapes -------------------------------------------------------------------------------

SV_COLUMNS = ["i", "l", "f", "d", "bd", "b", "ts", "s", "j", "by", "g", "g2", "m", "md"]
SORTABLE = ["i", "l", "f", "d", "bd", "b", "ts", "s", "g", "g2", "m", "md"]
_LITERALS = {"i": (5, 12), "l": (0, 2_000_000_000_014), "f": (-1.5, 4.0), "d": (0.25, 6.5),
             "bd": (-1.25, 2.5), "ts": (1_700_036_000_000, 1_700_108_000_000), "m": (10, 20),
             "md": (-0.5, 1.0), "g2": (1, 2)}  # fmt: skip


def _selections() -> list[NullQuery]:
    out = []
    for c in [*SV_COLUMNS, *sorted(MV_COLUMNS)]:
        sql = f"SELECT id, {c}, {c} IS NULL, {c} IS NOT NULL FROM {{t}} ORDER BY id LIMIT 300"
        out.append(_query(sql, True))
    for c in SORTABLE:
        for order in ("", " DESC", " NULLS FIRST", " DESC NULLS LAST"):
            out.append(_query(f"SELECT id, {c} FROM {{t}} ORDER BY {c}{order}, id LIMIT 25", True))
    out.append(_query("SELECT id, s FROM {t} ORDER BY s IS NULL DESC, s, id LIMIT 40", True))
    # SELECT * lists the columns in name order
    star = ", ".join(
        f'"{c}"' for c in sorted([n for n, _, _ in DIMENSIONS] + [n for n, _ in METRICS])
    )
    reference = f"SELECT {star} FROM t_{{mode}} ORDER BY id LIMIT 60"
    out.append(NullQuery("SELECT * FROM {t} ORDER BY id LIMIT 60",
                         reference.format(mode="on"), reference.format(mode="off"), True))  # fmt: skip
    return out


def _predicates() -> list[str]:
    preds = []
    for c, (low, high) in _LITERALS.items():
        preds += [
            f"{c} > {low}", f"{c} <= {low}", f"{c} = {low}", f"{c} != {low}",
            f"{c} IN ({low}, {high})", f"{c} NOT IN ({low}, {high})",
            f"{c} BETWEEN {low} AND {high}", f"NOT ({c} > {low})", f"{c} IS NULL",
            f"NOT ({c} IS NULL)", f"COALESCE({c}, {high}) >= {high}",
            f"NOT ({c} > {low} AND g = 'x')", f"NOT ({c} > {low} OR g = 'x')",
            f"{c} + 1 > {low}", f"NOT ({c} + 1 > {low})",
        ]  # fmt: skip
    preds += [
        "s = 'apple'", "s != 'apple'", "s IN ('apple', 'null')", "s NOT IN ('apple', '')",
        "s LIKE 'a%'", "NOT (s LIKE 'a%')", "s IS NOT NULL", "s = 'null'", "UPPER(s) = 'DATE'",
        "b = true", "NOT (b = true)", "b IS NULL", "j IS NULL", "by IS NOT NULL",
        "mi = 3", "mi IN (1, 2)", "NOT (mi = 3)", "mi != 3", "mi NOT IN (0, 1)", "mi > 3",
        "ms = 'a'", "NOT (ms = 'a')", "ms IS NULL", "ml = 10000000000", "mf < 0",
        "mdv BETWEEN 0.5 AND 1.0", "i IS NULL AND s IS NULL", "i IS NULL OR d IS NULL",
        "NOT (i IS NULL OR s = 'apple')", "NOT (NOT (i > 5))", "(i > 5) OR NOT (d > 0)",
        "REGEXP_LIKE(s, '^[a-c]')", "NOT REGEXP_LIKE(s, 'e')",
        "CASE WHEN i > 5 THEN 1 ELSE 0 END = 0", "NULLIF(i, 3) IS NULL", "i = d",
        "COALESCE(s, g, 'none') = 'x'", "g2 = 2 AND NOT (i < 10)",
    ]  # fmt: skip
    return preds


def _filters() -> list[NullQuery]:
    out = []
    for n, p in enumerate(_predicates()):
        nullif = "NULLIF" in p
        out.append(
            _query(f"SELECT id FROM {{t}} WHERE {p} ORDER BY id LIMIT 300", True, off=not nullif)
        )
        if n % 3 == 0:
            sql = f"SELECT COUNT(*) FROM {{t}} WHERE {p}"
            out.append(_query(sql, True, off=not nullif, aggregations=("count",)))
    return out


_EXPRESSIONS = [
    "i + 1", "d * 2", "l - 1", "i + d", "ABS(d)", "UPPER(s)", "LENGTH(s)",
    "COALESCE(i, -1)", "COALESCE(s, 'none')", "COALESCE(i, l, 0)", "COALESCE(f, d)",
    "CASE WHEN i > 5 THEN 'hi' WHEN i IS NULL THEN 'nil' ELSE 'lo' END",
    "CASE WHEN i > 5 THEN 1 END", "CASE WHEN d > 0 THEN 1 WHEN d < 0 THEN -1 ELSE 0 END",
    "i > 5", "(i > 5) AND (d > 0)", "(i > 5) OR (d > 0)", "NOT (i > 5)",
    "i IS NULL OR s IS NULL", "(i + 1) IS NULL", "b = true",
]  # fmt: skip
_NULLIF = ["NULLIF(i, 3)", "NULLIF(s, 'apple')", "COALESCE(NULLIF(i, 3), 99)"]


def _expressions() -> list[NullQuery]:
    out = []
    for e in _EXPRESSIONS + _NULLIF:
        sql = f"SELECT id, {e} FROM {{t}} ORDER BY id LIMIT 300"
        out.append(_query(sql, True, off=e not in _NULLIF))
    # (without null handling a CASE with no ELSE gives Pinot's placeholder, not NULL)
    for e in ("COALESCE(i, -1)", "i + d", "CASE WHEN i > 5 THEN 1 END"):
        sql = f"SELECT id, {e} FROM {{t}} ORDER BY {e} DESC, id LIMIT 30"
        out.append(_query(sql, True, off=not e.startswith("CASE")))
    return out


_AGG_COLUMNS = ["i", "l", "f", "d", "m", "md", "g2", "bd"]
_WHERES = ["", " WHERE g = 'x'", " WHERE id < 0", " WHERE NOT (i > 5)"]


def _aggregations() -> list[NullQuery]:
    out = []
    names = ("count", "sum", "min", "max", "avg", "distinctcount", "minmaxrange", "count")
    for c in _AGG_COLUMNS:
        for where in _WHERES[:3]:
            sql = (f"SELECT COUNT({c}), SUM({c}), MIN({c}), MAX({c}), AVG({c}), "
                   f"DISTINCTCOUNT({c}), MINMAXRANGE({c}), COUNT(*) FROM {{t}}{where}")  # fmt: skip
            out.append(_query(sql, True, aggregations=names))
    for where in _WHERES:
        sql = f"SELECT COUNT(s), DISTINCTCOUNT(s), COUNT(mi), COUNT(b) FROM {{t}}{where}"
        out.append(_query(sql, True, aggregations=("count",) * 4))
        sql = (f"SELECT SUMMV(mi), COUNTMV(mi), MAXMV(mdv), MINMV(ml), DISTINCTCOUNTMV(ms) "
               f"FROM {{t}}{where}")  # fmt: skip
        out.append(_query(sql, True, aggregations=("sum", "count", "max", "min", "count")))
    for expr_sql, names in [
        ("SUM(i + 1), COUNT(COALESCE(i, 0)), SUM(COALESCE(i, 0)), COUNT(i + d)",
         ("sum", "count", "sum", "count")),

        ("COUNT(*) FILTER (WHERE i IS NULL), SUM(m) FILTER (WHERE NOT (i > 5)), "
         "COUNT(d) FILTER (WHERE g IS NOT NULL)", ("count", "sum", "count")),
        ("SUM(mn), COUNT(*), AVG(mn)", ("sum", "count", "avg")),
    ]:  # fmt: skip
        for where in _WHERES:
            out.append(_query(f"SELECT {expr_sql} FROM {{t}}{where}", True, aggregations=names))
    out.append(_query("SELECT COUNT(NULLIF(i, 3)), SUM(NULLIF(i, 3)) FROM {t}", True, off=False))
    for where in _WHERES:  # (over no row, Pinot's sentinel without null handling is not SQL's)
        sql = f"SELECT VARPOP(md), STDDEVPOP(md), VARPOP(d), STDDEVSAMP(m) FROM {{t}}{where}"
        out.append(_query(sql, True, off=False))
        sql = f"SELECT VARPOP(md), STDDEVPOP(m) FROM {{t}}{where}"
        out.append(_query(sql, True, off="id < 0" not in where))
    for where in _WHERES:  # no ELSE: NULL with null handling, Pinot's placeholder without
        sql = f"SELECT MAX(CASE WHEN i > 5 THEN i END), MIN(CASE WHEN i > 5 THEN i END) FROM {{t}}{where}"
        out.append(_query(sql, True, off=False))
    return out


_KEYS = ["g", "g2", "b", "s", "k", "g, g2", "i IS NULL", "COALESCE(g, 'none')",
         "CASE WHEN i > 5 THEN 'hi' END", "ts", "i + 1"]  # fmt: skip
_GROUP_AGGS = "COUNT(*), COUNT(i), SUM(m), MIN(d), MAX(l), AVG(f), DISTINCTCOUNT(s)"


def _group_bys() -> list[NullQuery]:
    out = []
    for key in _KEYS:
        for order in ("", " DESC", " NULLS FIRST"):
            order_by = ", ".join(f"{k.strip()}{order}" for k in key.split(","))
            if key.startswith(("CASE", "COALESCE", "i ")):
                order_by = f"{key}{order}"
            sql = f"SELECT {key}, {_GROUP_AGGS} FROM {{t}} GROUP BY {key} ORDER BY {order_by} LIMIT 1000"
            # (without null handling a CASE with no ELSE gives Pinot's placeholder, not NULL)
            out.append(_query(sql, True, off=not key.startswith("CASE")))
        sql = f"SELECT {key}, {_GROUP_AGGS} FROM {{t}} WHERE NOT (i > 5) GROUP BY {key} LIMIT 1000"
        out.append(_query(sql, False))
    for tail in [
        "GROUP BY g HAVING SUM(m) > 100 ORDER BY g",
        "GROUP BY g HAVING MAX(d) IS NULL ORDER BY g",
        "GROUP BY g HAVING COUNT(i) > 1 AND SUM(m) IS NOT NULL ORDER BY g",
        "GROUP BY g ORDER BY SUM(m) DESC, g LIMIT 3",
        "GROUP BY g ORDER BY MAX(d) NULLS FIRST, g LIMIT 5",
        "GROUP BY g ORDER BY MIN(f) DESC NULLS LAST, g",
    ]:
        out.append(_query(f"SELECT g, SUM(m), MAX(d), MIN(f) FROM {{t}} {tail}", True))
    out += [
        _query("SELECT g2, SUM(m) + 1, COALESCE(MAX(d), -1), MIN(f) IS NULL FROM {t} "
               "GROUP BY g2 ORDER BY g2", True),
        _query("SELECT k, COUNT(*), SUM(mn), SUM(m), AVG(mn) FROM {t} GROUP BY k ORDER BY k", True),
        _query("SELECT k, COUNT(*), SUM(mn) FROM {t} WHERE k = 'p' GROUP BY k ORDER BY k", True),
        _query("SELECT k, g, SUM(mn), MIN(md), MAX(md) FROM {t} GROUP BY k, g ORDER BY k, g", True),
        _query("SELECT g, g2, COUNT(*) FROM {t} WHERE g2 IS NOT NULL GROUP BY g, g2 "
               "ORDER BY g DESC, g2 LIMIT 1000", True),
    ]  # fmt: skip
    day = "DATETRUNC('DAY', ts)"
    reference = ("SELECT epoch_ms(date_trunc('day', epoch_ms(ts))) AS day, COUNT(*), SUM(m) "
                 "FROM t_{mode} GROUP BY day ORDER BY day NULLS LAST")  # fmt: skip
    out.append(NullQuery(
        f"SELECT {day}, COUNT(*), SUM(m) FROM {{t}} GROUP BY {day} ORDER BY {day} LIMIT 1000",
        reference.format(mode="on"), reference.format(mode="off"), True,
    ))  # fmt: skip
    # a NULL multi-value doc is grouped under its stored default (Pinot's group keys ignore
    # NULL for multi-value columns): DuckDB unnests the default there
    for mv, default in (("ms", "'null'"), ("mi", "-2147483648")):
        sql = f"SELECT {mv}, COUNT(*), SUM(m) FROM {{t}} GROUP BY {mv} ORDER BY {mv} LIMIT 1000"
        reference = (
            "SELECT v, COUNT(*), SUM(m) FROM (SELECT unnest(COALESCE({mv}, [{default}])) AS v, m "
            "FROM t_{mode}) GROUP BY v ORDER BY v"
        )
        out.append(NullQuery(
            sql, reference.format(mv=mv, default=default, mode="on"),
            reference.format(mv=mv, default=default, mode="off"), True,
        ))  # fmt: skip
    return out


def _distincts() -> list[NullQuery]:
    return [
        _query("SELECT DISTINCT g FROM {t} ORDER BY g LIMIT 100", True),
        _query("SELECT DISTINCT g FROM {t} ORDER BY g DESC LIMIT 100", True),
        _query("SELECT DISTINCT g, b FROM {t} ORDER BY g, b NULLS FIRST LIMIT 100", True),
        _query("SELECT DISTINCT s FROM {t} ORDER BY s LIMIT 100", True),
        _query("SELECT DISTINCT i IS NULL, g2 FROM {t} ORDER BY 1, 2 LIMIT 100", True),
        _query("SELECT DISTINCT COALESCE(g, 'none') FROM {t} ORDER BY 1 LIMIT 100", True),
        _query("SELECT DISTINCT d FROM {t} WHERE NOT (d > 0) LIMIT 1000", False),
    ]


def all_queries() -> list[NullQuery]:
    return [
        *_selections(), *_filters(), *_expressions(), *_aggregations(), *_group_bys(),
        *_distincts(),
    ]  # fmt: skip
