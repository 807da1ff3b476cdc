"""SQL text -> ``ParsedQuery``: Pinot's dialect read with sqlglot.

Pinot SQL is ANSI-ish: double-quoted identifiers, single-quoted strings, ``SET k=v;``
statements before the query, ``EXPLAIN PLAN FOR`` in front, ``LIMIT n`` / ``LIMIT o, n`` /
``LIMIT n OFFSET o``. The dialect below keeps every function call anonymous so the name the
user wrote (``SUBSTR`` vs ``SUBSTRING``, ``DATETRUNC``, ``PERCENTILE90`` ...) reaches our own
function registry unchanged; only syntax-level forms (CAST, CASE, TRIM) are parsed by sqlglot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp, parser
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from engine.query.errors import QueryParseError, QueryValidationError
from engine.query.expressions import STAR, Expression, Function, Identifier, Literal
from engine.query.sql_text import check_clauses, parse_error_message, split_statements


class PinotDialect(Dialect):
    # Pinot sorts NULL as larger than any value: ASC NULLS LAST, DESC NULLS FIRST unless the
    # query says otherwise (OrderByExpressionContext.isNullsLast); sqlglot then fills in
    # ``nulls_first`` for every ORDER BY item
    NULL_ORDERING = "nulls_are_large"

    class Parser(parser.Parser):
        FUNCTIONS = {}  # every call stays exp.Anonymous, resolved by engine.query.functions


_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+PLAN\s+FOR\s+", re.IGNORECASE)
_OPTION = re.compile(r"\bOPTION\s*\(([^)]*)\)\s*;?\s*$", re.IGNORECASE)

_CAST_TYPES = {
    "BIGINT": "LONG", "INT": "INT", "SMALLINT": "INT", "TINYINT": "INT", "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT", "DECIMAL": "BIG_DECIMAL", "VARCHAR": "STRING", "TEXT": "STRING",
    "CHAR": "STRING", "BOOLEAN": "BOOLEAN", "TIMESTAMP": "TIMESTAMP", "VARBINARY": "BYTES",
    "BINARY": "BYTES", "JSON": "JSON",
}  # fmt: skip

_BINARY = {
    exp.Add: "plus", exp.Sub: "minus", exp.Mul: "times", exp.Div: "divide", exp.Mod: "mod",
    exp.EQ: "equals", exp.NEQ: "not_equals", exp.LT: "less_than", exp.LTE: "less_than_or_equal",
    exp.GT: "greater_than", exp.GTE: "greater_than_or_equal", exp.And: "and", exp.Or: "or",
    exp.Like: "like", exp.RegexpLike: "regexp_like", exp.DPipe: "concat",
}  # fmt: skip


@dataclass
class SelectItem:
    expr: Expression
    alias: str | None = None


@dataclass
class OrderItem:
    expr: Expression
    desc: bool = False
    nulls_first: bool | None = None  # None: Pinot's default, NULL sorting as the largest value

    @property
    def nulls_last(self) -> bool:
        return not self.desc if self.nulls_first is None else not self.nulls_first


@dataclass
class ParsedQuery:
    """The query as written, before validation against a schema."""

    table: str
    select: list[SelectItem]
    distinct: bool = False
    where: Expression | None = None
    group_by: list[Expression] = field(default_factory=list)
    having: Expression | None = None
    order_by: list[OrderItem] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    options: dict[str, str] = field(default_factory=dict)
    explain: bool = False


def parse_sql(sql: str) -> ParsedQuery:
    """Parse one Pinot SQL request (optional ``SET`` statements, optional ``EXPLAIN PLAN
    FOR``, one SELECT). Raises ``QueryParseError`` (code 150) with the line and column of the
    bad token."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryParseError("Caught exception while parsing query: the SQL is empty")
    options: dict[str, str] = {}
    text = sql
    match = _OPTION.search(text)
    if match:  # legacy trailing OPTION(k=v, k2=v2)
        for pair in match.group(1).split(","):
            if "=" in pair:
                key, value = pair.split("=", 1)
                options[key.strip()] = value.strip().strip("'\"")
        text = text[: match.start()]
    explain = False
    pieces = split_statements(text)
    if pieces and _EXPLAIN.match(pieces[-1]):
        explain = True
        pieces[-1] = _EXPLAIN.sub("", pieces[-1])
    try:
        statements = [  # a comment alone between two semicolons parses as an empty statement
            s
            for s in sqlglot.parse(";".join(pieces), read=PinotDialect)
            if s is not None and not isinstance(s, exp.Semicolon)
        ]
    except (ParseError, TokenError) as err:
        raise QueryParseError(parse_error_message(err)) from err
    query = None
    for statement in statements:
        if isinstance(statement, exp.Set):
            for item in statement.expressions:
                eq = item.this
                if not isinstance(eq, exp.EQ):
                    raise QueryParseError(
                        f"Caught exception while parsing query: bad SET {item.sql()}"
                    )
                options[eq.this.name] = _option_value(eq.expression)
        elif isinstance(statement, exp.Command) and statement.this.upper() == "EXPLAIN":
            inner = str(statement.expression.this) if statement.expression else ""
            if not _EXPLAIN.match("EXPLAIN " + inner):
                raise QueryParseError(
                    "Caught exception while parsing query: expected EXPLAIN PLAN FOR"
                )
            explain = True
            body = _EXPLAIN.sub("", "EXPLAIN " + inner)
            try:
                query = sqlglot.parse_one(body, read=PinotDialect)
            except (ParseError, TokenError) as err:
                raise QueryParseError(parse_error_message(err)) from err
        elif query is None:
            query = statement
        else:
            raise QueryParseError("Caught exception while parsing query: more than one query")
    if not isinstance(query, exp.Select):
        kind = type(query).__name__.upper() if query is not None else "nothing"
        raise QueryParseError(f"Caught exception while parsing query: expected SELECT, got {kind}")
    check_clauses(query)
    parsed = _from_select(query)
    parsed.options.update(options)
    parsed.explain = explain
    return parsed


def _option_value(node: exp.Expression) -> str:
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Literal | exp.Column | exp.Identifier):
        return str(node.name)
    return node.sql()


def _from_select(select: exp.Select) -> ParsedQuery:
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise QueryParseError("Caught exception while parsing query: missing FROM <table>")
    if select.args.get("joins"):
        raise QueryValidationError("JOIN is not supported by the single-stage engine")
    table = from_.this.name
    items = []
    for node in select.expressions:
        if isinstance(node, exp.Alias):
            items.append(SelectItem(to_expression(node.this), node.alias))
        else:
            items.append(SelectItem(to_expression(node)))
    group = select.args.get("group")
    order = select.args.get("order")
    limit = select.args.get("limit")
    offset = select.args.get("offset")
    where = select.args.get("where")
    having = select.args.get("having")
    return ParsedQuery(
        table=table,
        select=items,
        distinct=select.args.get("distinct") is not None,
        where=to_expression(where.this) if where else None,
        group_by=[to_expression(g) for g in group.expressions] if group else [],
        having=to_expression(having.this) if having else None,
        order_by=[
            OrderItem(to_expression(o.this), bool(o.args.get("desc")), o.args.get("nulls_first"))
            for o in order.expressions
        ]
        if order
        else [],
        limit=_int_clause(limit, "LIMIT"),
        offset=_int_clause(offset, "OFFSET") or 0,
    )


# Pinot reads LIMIT and OFFSET as Java ints; a larger one is a query error, not an overflow
MAX_LIMIT = 2**31 - 1


def _int_clause(node: exp.Expression | None, name: str) -> int | None:
    if node is None:
        return None
    value = node.expression
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        number = int(value.this)
        if number <= MAX_LIMIT:
            return number
    raise QueryParseError(
        f"Caught exception while parsing query: {name} must be an integer from 0 to "
        f"{MAX_LIMIT}, got {value.sql()}"
    )


def to_expression(node: exp.Expression) -> Expression:
    """Convert one sqlglot node to our expression tree."""
    if isinstance(node, exp.Paren):
        return to_expression(node.this)
    if isinstance(node, exp.Column):
        if node.table:
            # table-qualified column: Pinot accepts "mytable.col"; the qualifier is ignored
            pass
        if isinstance(node.this, exp.Star):
            return STAR
        return Identifier(node.name)
    if isinstance(node, exp.Star):
        return STAR
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal(node.this)
        text = node.this
        try:
            return Literal(int(text))
        except ValueError:
            return Literal(float(text))
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this))
    if isinstance(node, exp.Null):
        return Literal(None)
    if isinstance(node, exp.Neg):
        inner = to_expression(node.this)
        if isinstance(inner, Literal) and isinstance(inner.value, int | float):
            return Literal(-inner.value)
        return Function("minus", (Literal(0), inner))
    for cls, name in _BINARY.items():
        if type(node) is cls:
            left, right = to_expression(node.this), to_expression(node.expression)
            if name in ("and", "or"):  # n-ary: a AND b AND c is one node with three children
                args = [
                    a
                    for side in (left, right)
                    for a in (
                        side.args if isinstance(side, Function) and side.name == name else (side,)
                    )
                ]
                return Function(name, tuple(args))
            return Function(name, (left, right))
    if isinstance(node, exp.Not):
        inner = to_expression(node.this)
        if isinstance(inner, Function):
            flipped = {"in": "not_in", "is_null": "is_not_null", "equals": "not_equals"}
            if inner.name in flipped:
                return Function(flipped[inner.name], inner.args)
        return Function("not", (inner,))
    if isinstance(node, exp.In):
        if node.args.get("query") is not None:
            raise QueryValidationError("IN (subquery) is not supported by the single-stage engine")
        return Function(
            "in", (to_expression(node.this), *(to_expression(e) for e in node.expressions))
        )
    if isinstance(node, exp.Between):
        return Function(
            "between",
            (
                to_expression(node.this),
                to_expression(node.args["low"]),
                to_expression(node.args["high"]),
            ),
        )
    if isinstance(node, exp.Is):
        if isinstance(node.expression, exp.Null):
            return Function("is_null", (to_expression(node.this),))
        raise QueryValidationError(f"Unsupported IS predicate: {node.sql()}")
    if isinstance(node, exp.Case):
        args: list[Expression] = []
        subject = node.this
        for branch in node.args.get("ifs") or []:
            cond = to_expression(branch.this)
            if subject is not None:
                cond = Function("equals", (to_expression(subject), cond))
            args += [cond, to_expression(branch.args["true"])]
        default = node.args.get("default")
        args.append(to_expression(default) if default is not None else Literal(None))
        return Function("case", tuple(args))
    if isinstance(node, exp.If):
        false = node.args.get("false")
        return Function(
            "case",
            (to_expression(node.this), to_expression(node.args["true"]),
             to_expression(false) if false is not None else Literal(None)),
        )  # fmt: skip
    if isinstance(node, exp.Cast):
        to = node.args["to"]
        type_name = to.this.name if hasattr(to.this, "name") else str(to.this)
        target = _CAST_TYPES.get(type_name.upper(), type_name.upper())
        if to.this == exp.DataType.Type.USERDEFINED:
            target = to.args.get("kind", to.sql()).upper()
        return Function("cast", (to_expression(node.this), Literal(target)))
    if isinstance(node, exp.Trim):
        return Function("trim", (to_expression(node.this),))
    if isinstance(node, exp.Filter):  # AGG(...) FILTER (WHERE cond)
        return Function("filter", (to_expression(node.this), to_expression(node.expression.this)))
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        raw_args = list(node.expressions)
        if len(raw_args) == 1 and isinstance(raw_args[0], exp.Distinct):
            if name != "count":
                raise QueryValidationError(
                    f"DISTINCT is only supported inside COUNT, not {name.upper()}"
                )
            inner = raw_args[0].expressions
            if len(inner) != 1:
                raise QueryValidationError("COUNT(DISTINCT ...) takes exactly one expression")
            return Function("distinctcount", (to_expression(inner[0]),))
        return Function(name, tuple(to_expression(a) for a in raw_args))
    if isinstance(node, exp.Func):
        name = node.sql_name().lower()
        args = []
        for key in node.arg_types:
            value = node.args.get(key)
            if value is None:
                continue
            for v in value if isinstance(value, list) else [value]:
                args.append(to_expression(v))
        return Function(name, tuple(args))
    raise QueryValidationError(f"Unsupported SQL construct: {node.sql()}")
