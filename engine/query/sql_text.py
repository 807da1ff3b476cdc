"""SQL text handling both engines share: a request split into its statements, Pinot's message
for a parse error, and the clauses sqlglot accepts empty although SQL does not."""

from __future__ import annotations

import re

from sqlglot import exp

from engine.query.errors import QueryParseError


def split_statements(text: str) -> list[str]:
    """The statements of a request (SET ...; SET ...; the query), split on semicolons outside
    quotes and comments."""
    pieces, current, quote, i = [], [], None, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if text.startswith(quote, i):
                current.append(quote)
                i += len(quote)
                quote = None
                continue
        elif text.startswith("/*", i):
            quote = "*/"
        elif text.startswith("--", i):
            quote = "\n"
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            pieces.append("".join(current))
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    pieces.append("".join(current))
    return [p for p in pieces if p.strip()]


def check_clauses(tree: exp.Expression) -> None:
    """Clauses sqlglot accepts empty but SQL does not (`GROUP BY` with nothing after it)."""
    for group in tree.find_all(exp.Group):
        if (
            not group.expressions
            and not group.args.get("grouping_sets")
            and not any(group.args.get(k) for k in ("rollup", "cube", "totals"))
        ):
            raise QueryParseError(
                "Caught exception while parsing query: GROUP BY needs at least one expression"
            )


_TOKEN_REPR = re.compile(
    r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+.*?>"
)


def _describe(description: str) -> str:
    return _TOKEN_REPR.sub(
        lambda m: "end of input" if m.group(1) == "SENTINEL" else f"'{m.group(2)}'",
        description or "",
    )


def parse_error_message(err: Exception) -> str:
    """Pinot's parse-error message for a sqlglot error: what, at which line and column, near
    which token (end of input spelled out)."""
    errors = getattr(err, "errors", None) or []
    if errors:
        first = errors[0]
        token = first.get("highlight") or ""
        return (
            f"Caught exception while parsing query: {_describe(first.get('description'))} "
            f"at line {first.get('line')}, column {first.get('col')}"
            + (f" near '{token}'" if token else "")
        )
    return f"Caught exception while parsing query: {err}"
