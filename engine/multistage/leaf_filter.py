"""Which WHERE conjuncts the leaf's single-stage engine evaluates, in its Pinot SQL.

Only conjuncts whose meaning is the same in both engines go down: a column of type INT,
LONG, DOUBLE or STRING compared with a literal of its kind (=, <>, <, <=, >, >=), IN a list
of such literals, BETWEEN two, LIKE a pattern, and AND/OR of those. Each rejects NULL, so a
row it drops could not have passed the filter above it, which stays (the leaf's filter only
narrows what is read, using the indexes and pruning).
"""

from __future__ import annotations

from sqlglot import exp

_TYPES = {"INT", "LONG", "DOUBLE", "STRING"}
_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<",
                exp.LTE: "<="}  # fmt: skip
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "=", "<>": "<>"}


def pinot_filter(node: exp.Expression, columns: dict[str, tuple[str, str]]) -> str | None:
    """Pinot SQL for ``node`` (a bound conjunct), or None when it stays above the leaf.
    ``columns``: field id -> (stored column name, Pinot type)."""
    node = node.this if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.And | exp.Or):
        left = pinot_filter(node.this, columns)
        right = pinot_filter(node.expression, columns)
        if left is None or right is None:
            return None
        word = "AND" if isinstance(node, exp.And) else "OR"
        return f"({left}) {word} ({right})"
    op = _COMPARISONS.get(type(node))
    if op is not None:
        column, literal = node.this, node.expression
        if not isinstance(column, exp.Column):
            column, literal, op = literal, column, _FLIPPED[op]
        name = _column(column, literal, columns)
        return f"{name} {op} {_literal(literal)}" if name else None
    if isinstance(node, exp.In) and node.args.get("query") is None:
        values = node.expressions
        names = {_column(node.this, v, columns) for v in values}
        if not values or None in names:
            return None
        return f"{names.pop()} IN ({', '.join(_literal(v) for v in values)})"
    if isinstance(node, exp.Between) and not node.args.get("symmetric"):
        low, high = node.args["low"], node.args["high"]
        name = _column(node.this, low, columns)
        if name and name == _column(node.this, high, columns):
            return f"{name} BETWEEN {_literal(low)} AND {_literal(high)}"
        return None
    if isinstance(node, exp.Like) and not isinstance(node.parent, exp.Escape):
        pattern = node.expression
        name = _column(node.this, pattern, columns)
        if name and pattern.is_string:
            return f"{name} LIKE {_literal(pattern)}"
    return None


def _column(column, literal, columns) -> str | None:
    if not isinstance(column, exp.Column) or column.name not in columns:
        return None
    if not isinstance(literal, exp.Literal):
        return None
    name, pinot_type = columns[column.name]
    if pinot_type not in _TYPES:
        return None
    if pinot_type == "STRING" and not literal.is_string:
        return None
    if pinot_type != "STRING":
        if literal.is_string:
            return None
        if pinot_type in ("INT", "LONG") and not literal.this.lstrip("-").isdigit():
            return None
    return '"' + name.replace('"', '""') + '"'


def _literal(literal: exp.Literal) -> str:
    if literal.is_string:
        return "'" + literal.this.replace("'", "''") + "'"
    return literal.this
