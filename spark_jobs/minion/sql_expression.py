"""Spark SQL from task configs (PurgeTask's ``purgeFilter`` and ``modify.<column>``) is an
expression over the table's columns, never a query.

Each text is parsed with sqlglot's Spark dialect and allowed only when every node is a column
of the table, a literal, an operator or a scalar function on the allowlist below. Subqueries,
tables and file reads (``text.`/path```), table and generator functions, ``reflect`` and
``java_method``, aggregates, windows, lambdas, parameters and anything unknown are refused
with the config key and the offending parts. The controller checks a config when it is
submitted and generated, and the minion again right before Spark sees it; Spark is then given
the expression as sqlglot writes it back, so what runs is what was checked, even where
sqlglot and Spark would read the original text differently. Text holding ``${`` is refused
too: Spark replaces ``${env:…}`` and ``${system:…}`` in it before parsing, even in literals.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp

# operators and the nodes that make up literals, casts and CASE
_STRUCTURE = (
    exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.HexString, exp.Paren,
    exp.Neg, exp.Not, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.EQ,
    exp.NEQ, exp.NullSafeEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Xor,
    exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseNot, exp.BitwiseLeftShift,
    exp.BitwiseRightShift, exp.DPipe, exp.Like, exp.ILike, exp.Escape, exp.Between, exp.In,
    exp.Is, exp.Case, exp.If, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam,
    exp.Interval, exp.Var, exp.Bracket,
)  # fmt: skip
# scalar functions, as sqlglot names the Spark functions it knows
_SCALAR_FUNCTIONS = (
    exp.Abs, exp.Ceil, exp.Floor, exp.Round, exp.Sqrt, exp.Cbrt, exp.Pow, exp.Exp, exp.Ln,
    exp.Log, exp.Sign, exp.Greatest, exp.Least, exp.IsNan, exp.Nanvl, exp.SafeDivide,
    exp.Upper, exp.Lower, exp.Initcap, exp.Trim, exp.Substring, exp.SubstringIndex,
    exp.Length, exp.Concat, exp.ConcatWs, exp.Replace, exp.Translate, exp.Reverse,
    exp.Repeat, exp.Left, exp.Right, exp.Pad, exp.Overlay, exp.StrPosition, exp.RegexpReplace,
    exp.RegexpExtract, exp.RegexpLike, exp.RegexpSplit, exp.StartsWith, exp.EndsWith,
    exp.Contains, exp.MD5, exp.SHA, exp.SHA2, exp.Hex, exp.Unhex, exp.ToBase64,
    exp.FromBase64, exp.Coalesce, exp.Nullif, exp.Nvl2, exp.ArrayContains, exp.ArraySize,
    exp.Array, exp.Year, exp.Quarter, exp.Month, exp.WeekOfYear, exp.Day, exp.DayOfMonth,
    exp.DayOfWeek, exp.DayOfYear, exp.Hour, exp.Minute, exp.Second, exp.TsOrDsToDate,
    exp.TsOrDsAdd, exp.DateAdd, exp.DateSub, exp.DateDiff, exp.TimestampTrunc,
    exp.DateTrunc, exp.TimeToStr, exp.TimeStrToTime, exp.StrToTime, exp.StrToUnix,
    exp.UnixToStr, exp.UnixToTime, exp.TimeToUnix, exp.CurrentTimestamp, exp.CurrentDate,
)  # fmt: skip
# Spark scalar functions sqlglot has no class for (it parses them as Anonymous)
_SCALAR_NAMES = frozenset({
    "hash", "xxhash64", "crc32", "sha1", "pmod", "bround", "isnull", "isnotnull", "btrim",
    "mask", "format_number", "octet_length", "bit_length", "positive", "negative", "bigint",
    "smallint", "tinyint", "decimal",
})  # fmt: skip
_ALLOWED = _STRUCTURE + _SCALAR_FUNCTIONS


class ExpressionRefusedError(ValueError):
    """A config's SQL that is not an allowed expression; ``key`` names the config key."""

    def __init__(self, key: str, detail: str):
        self.key = key
        self.detail = detail
        super().__init__(f"Invalid task config '{key}': {detail}")


def _shown(node: exp.Expression) -> str:
    text = node.sql(dialect="spark", comments=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _offence(node: exp.Expression, columns: set[str] | None) -> str | None:
    """Why ``node`` itself is not allowed, or None."""
    if isinstance(node, exp.Query | exp.Subquery | exp.Exists | exp.Table | exp.From):
        return f"a subquery or table ({_shown(node)})"
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        return None if name in _SCALAR_NAMES else f"the function {name.upper()}"
    if not isinstance(node, _ALLOWED):
        if isinstance(node, exp.Func):
            return f"the function {node.sql_name()}"
        return f"{type(node).__name__} ({_shown(node)})"
    if isinstance(node, exp.In) and any(node.args.get(k) for k in ("query", "unnest", "field")):
        return f"an IN over a query ({_shown(node)})"
    if isinstance(node, exp.Column):
        if node.table or node.args.get("db") or node.args.get("catalog"):
            return f"the qualified name {_shown(node)}"
        if columns is not None and node.name.lower() not in columns:
            return f"the unknown column {node.name}"
    return None


def _offences(root: exp.Expression, columns: set[str] | None) -> list[str]:
    found: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        why = _offence(node, columns)
        if why is not None:
            if why not in found:
                found.append(why)
            continue  # what a refused node holds is refused with it
        stack.extend(reversed(list(node.iter_expressions())))
    return found


def checked_expression(key: str, sql: str, columns: Iterable[str] | None,
                       what: str = "expression") -> str:  # fmt: skip
    """The Spark SQL to run for ``sql`` (a predicate or expression over ``columns``; any
    column when None), as sqlglot writes it back; ExpressionRefusedError naming ``key`` and
    what is not allowed otherwise."""
    text = (sql or "").strip()
    if not text:
        raise ExpressionRefusedError(key, f"needs a SQL {what}")
    try:
        parsed = sqlglot.parse_one(f"SELECT {text}", read="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise ExpressionRefusedError(key, f"not a SQL {what}: {text!r} ({exc})") from None
    extra = [k for k, v in parsed.args.items() if v and k != "expressions"]
    if not isinstance(parsed, exp.Select) or extra or len(parsed.expressions) != 1:
        raise ExpressionRefusedError(key, f"must be one SQL {what}, not a query: {text!r}")
    node = parsed.expressions[0]
    allowed = None if columns is None else {c.lower() for c in columns}
    offences = _offences(node, allowed)
    written = node.sql(dialect="spark", comments=False)
    if "${" in written:  # Spark substitutes ${env:…}, ${system:…} in the text before parsing
        offences.append("a ${…} variable reference")
    if offences:
        raise ExpressionRefusedError(
            key,
            f"{text!r} may use only the table's columns, literals, operators and scalar "
            f"functions; not allowed: {'; '.join(offences)}",
        )
    return written
