"""A multi-stage request's text -> options, EXPLAIN mode and the sqlglot tree of the query.

Pinot's multi-stage grammar is Calcite's (Babel conformance) with Pinot's additions:
``SET k = v;`` statements before the query, ``EXPLAIN PLAN FOR`` / ``EXPLAIN IMPLEMENTATION
PLAN FOR`` in front, ``MINUS`` for ``EXCEPT``, ``[LEFT] ASOF JOIN ... MATCH_CONDITION(...)``
and hints in comments (``SELECT /*+ joinOptions(k='v') */``, ``FROM t /*+ tableOptions(...)
*/``). Function calls stay anonymous, as in the single-stage parser, so the name the user
wrote reaches the function mapping unchanged.
"""

from __future__ import annotations

import dataclasses
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Tokenizer, TokenType

from engine.query.errors import QueryParseError
from engine.query.parser import PinotDialect
from engine.query.sql_text import check_clauses, parse_error_message, split_statements

_EXPLAIN = re.compile(
    r"^\s*EXPLAIN\s+(?:(IMPLEMENTATION)\s+)?PLAN\s+"
    r"(?:(?:INCLUDING\s+ALL\s+ATTRIBUTES|EXCLUDING\s+ATTRIBUTES|WITHOUT\s+IMPLEMENTATION)\s+)?"
    r"(?:AS\s+(?:JSON|XML|DOT)\s+)?FOR\s+",
    re.IGNORECASE,
)
_LEFT_ASOF = re.compile(r"\bLEFT\s+(?:OUTER\s+)?ASOF\s+JOIN\b", re.IGNORECASE)
_PLAIN_ASOF = re.compile(r"(?<!\bLEFT\s)\bASOF\s+JOIN\b", re.IGNORECASE)


class MultiStageDialect(PinotDialect):
    """Pinot's dialect plus the multi-stage keywords. Pinot orders ASC NULLS LAST and DESC
    NULLS FIRST by default (nulls sort as the largest value)."""

    NULL_ORDERING = "nulls_are_large"

    class Tokenizer(Tokenizer):
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]  # bytes literals
        UNICODE_STRINGS = [("U&'", "'"), ("u&'", "'")]  # U&'d\0061ta' (Calcite, SQL:2003)
        KEYWORDS = {
            **Tokenizer.KEYWORDS,
            "MINUS": TokenType.EXCEPT,
            "MATCH_CONDITION": TokenType.MATCH_CONDITION,
        }


@dataclasses.dataclass
class MultiStageQuery:
    sql: str
    tree: exp.Expression  # a SELECT or a set operation
    options: dict[str, str]
    explain: str | None = None  # None, "logical" or "implementation"


def parse_request(sql: str, options: dict[str, str] | None = None) -> MultiStageQuery:
    """Parse one request. Options merge first-wins (Pinot): the ``SET`` statements, then the
    request's ``queryOptions`` (``options``). Raises ``QueryParseError`` (code 150)."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryParseError("Caught exception while parsing query: the SQL is empty")
    pieces = split_statements(sql)
    merged: dict[str, str] = {}
    query_text = None
    for piece in pieces:
        match = re.match(r"^\s*SET\s+(.+?)\s*=\s*(.+?)\s*$", piece, re.IGNORECASE | re.DOTALL)
        if match and query_text is None:
            merged.setdefault(match.group(1).strip().strip('"`'), _unquote(match.group(2)))
            continue
        if query_text is not None:
            raise QueryParseError("Caught exception while parsing query: more than one query")
        query_text = piece
    if query_text is None:
        raise QueryParseError("Caught exception while parsing query: no query after SET")
    for key, value in (options or {}).items():
        merged.setdefault(key, value)
    explain = None
    match = _EXPLAIN.match(query_text)
    if match:
        explain = "implementation" if match.group(1) else "logical"
        query_text = query_text[match.end() :]
    tree = parse_query(query_text)
    return MultiStageQuery(sql, tree, merged, explain)


def parse_query(text: str) -> exp.Expression:
    """The sqlglot tree of one query (no SET, no EXPLAIN)."""
    text = _LEFT_ASOF.sub("ASOF LEFT JOIN", text)
    text = _PLAIN_ASOF.sub("ASOF JOIN", text)
    try:
        statements = [
            s
            for s in sqlglot.parse(text, read=MultiStageDialect)
            if s is not None and not isinstance(s, exp.Semicolon)
        ]
    except (ParseError, TokenError) as err:
        raise QueryParseError(parse_error_message(err)) from err
    if len(statements) != 1:
        raise QueryParseError("Caught exception while parsing query: expected one query")
    tree = statements[0].transform(_unicode_literal)
    if not isinstance(tree, exp.Query):
        kind = type(tree).__name__.upper()
        raise QueryParseError(f"Caught exception while parsing query: expected SELECT, got {kind}")
    check_clauses(tree)
    for join in tree.find_all(exp.Join):
        _check_join_condition(join)
        if join.args.get("method") == "ASOF" and not join.args.get("match_condition"):
            raise QueryParseError(
                "Caught exception while parsing query: ASOF JOIN needs MATCH_CONDITION(...)"
            )
        if join.args.get("method") == "ASOF" and join.args.get("on") is None:
            raise QueryParseError("Caught exception while parsing query: ASOF JOIN needs ON")
    return tree


_NO_CONDITION_NEEDED = ("CROSS", "NATURAL")


def _check_join_condition(join: exp.Join) -> None:
    """A JOIN keyword (not a comma) without ON or USING is an error, as in Calcite: sqlglot
    reads `a JOIN b` and `a JOIN b ON` (nothing after it) as a cross product, which would
    answer a different question than the one half-typed."""
    if "pivots" not in join.args and "on" not in join.args:
        return  # `FROM a, b`: a comma join, a cross product by definition
    if join.args.get("kind") in _NO_CONDITION_NEEDED or join.args.get("method") == "NATURAL":
        return
    if join.args.get("on") is None and not join.args.get("using"):
        raise QueryParseError(
            "Caught exception while parsing query: INNER, LEFT, RIGHT or FULL join requires "
            f"a condition (NATURAL keyword or ON or USING clause): JOIN {join.this.sql()[:80]}"
        )


def _unicode_literal(node: exp.Expression) -> exp.Expression:
    """``U&'...'`` as a plain string: ``\\XXXX`` and ``\\+XXXXXX`` are code points (with
    ``UESCAPE 'c'`` another escape character), the escape doubled is itself."""
    if not isinstance(node, exp.UnicodeString):
        return node
    escape = node.args.get("escape")
    char = escape.name if isinstance(escape, exp.Expression) else "\\"
    text, out, i = node.this, [], 0
    while i < len(text):
        if text[i] != char:
            out.append(text[i])
            i += 1
        elif text[i + 1 : i + 2] == char:
            out.append(char)
            i += 2
        else:
            plus = text[i + 1 : i + 2] == "+"
            digits = text[i + 2 : i + 8] if plus else text[i + 1 : i + 5]
            if not re.fullmatch(r"[0-9A-Fa-f]{6}" if plus else r"[0-9A-Fa-f]{4}", digits):
                raise QueryParseError(f"Bad Unicode escape in U&'{text}'")
            out.append(chr(int(digits, 16)))
            i += 8 if plus else 5
    return exp.Literal.string("".join(out))


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def hints_of(node: exp.Expression) -> dict[str, dict[str, str]]:
    """``{"joinOptions": {k: v}, ...}`` from a SELECT's ``/*+ ... */`` hint."""
    hint = node.args.get("hint") if isinstance(node, exp.Select) else None
    out: dict[str, dict[str, str]] = {}
    for call in hint.expressions if hint is not None else []:
        if isinstance(call, exp.Anonymous):
            out.setdefault(str(call.this), {}).update(_pairs(call.expressions))
    return out


_TABLE_HINT = re.compile(r"^\s*\+?\s*(\w+)\s*\((.*)\)\s*$", re.DOTALL)
_PAIR = re.compile(r"(\w+)\s*=\s*'([^']*)'")


def table_hints(table: exp.Expression) -> dict[str, str]:
    """``tableOptions(k='v')`` written in a comment right after a table (or its alias)."""
    out: dict[str, str] = {}
    alias = table.args.get("alias")
    for comment in [*(table.comments or []), *((alias.comments or []) if alias else [])]:
        match = _TABLE_HINT.match(comment)
        if match and match.group(1).lower() == "tableoptions":
            out.update(_PAIR.findall(match.group(2)))
    return out


def _pairs(expressions) -> dict[str, str]:
    out = {}
    for pair in expressions:
        if isinstance(pair, exp.EQ):
            key = pair.this.name if isinstance(pair.this, exp.Column) else pair.this.sql()
            value = pair.expression
            out[key] = value.name if isinstance(value, exp.Literal) else value.sql()
    return out


_USE_MSE = re.compile(r"\bSET\s+\"?useMultistageEngine\"?\s*=\s*'?(true|false)'?", re.IGNORECASE)


def wants_multistage(sql: str, options: dict[str, str], forced: bool) -> bool | None:
    """The engine a request asks for: True (multi-stage), False (single-stage), None (not
    said). First wins, as in Pinot: ``SET useMultistageEngine``, then the request's
    ``queryOptions``, then the endpoint (``POST /query`` forces the multi-stage engine)."""
    match = _USE_MSE.search(sql)
    if match:
        return match.group(1).lower() == "true"
    for key, value in options.items():
        if key.lower() == "usemultistageengine":
            return str(value).strip().lower() == "true"
    return True if forced else None


def needs_multistage(sql: str) -> bool:
    """Whether the query uses what only the multi-stage engine runs: a join, a subquery, a
    window function, a set operation, a CTE or VALUES."""
    try:
        query = parse_request(sql)
    except QueryParseError:
        return False
    tree = query.tree
    if not isinstance(tree, exp.Select) or tree.args.get("with_") or tree.args.get("with"):
        return True
    kinds = (exp.Join, exp.Subquery, exp.Window, exp.SetOperation, exp.Values, exp.Exists)
    return any(isinstance(node, kinds) for node in tree.walk())
