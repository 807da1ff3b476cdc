"""Evaluates Pinot transform and filter expressions over Arrow record batches.

Expressions are parsed with sqlglot (so quoting, ``''`` escapes and operators follow SQL) and
evaluated column-at-a-time with pyarrow.compute. Function calls resolve to
``engine.ingest.functions``. ``Groovy({...})`` is rejected: Pinot disables Groovy by default.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from engine.ingest.functions import FUNCTIONS


class ExpressionError(ValueError):
    """An expression that cannot be parsed or names an unknown function."""


_BINARY = {
    exp.Add: pc.add,
    exp.Sub: pc.subtract,
    exp.Mul: pc.multiply,
    exp.EQ: pc.equal,
    exp.NEQ: pc.not_equal,
    exp.GT: pc.greater,
    exp.GTE: pc.greater_equal,
    exp.LT: pc.less,
    exp.LTE: pc.less_equal,
    exp.And: pc.and_kleene,
    exp.Or: pc.or_kleene,
}
# sqlglot turns some function names into typed nodes; map them back to Pinot's functions.
_TYPED_FUNCTIONS = {
    exp.Upper: "upper",
    exp.Lower: "lower",
    exp.Trim: "trim",
    exp.Length: "length",
    exp.Ceil: "ceil",
    exp.Floor: "floor",
    exp.Abs: "abs",
    exp.Round: "round",
    exp.Mod: "mod",
    exp.Substring: "substr",
    exp.Concat: "concat",
    exp.Div: "divide",
    exp.Reverse: "reverse",
}
_CASTS = {
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
}


class Expression:
    """A parsed expression. ``columns`` are the input columns it reads."""

    def __init__(self, text: str):
        self.text = text
        stripped = text.strip()
        if stripped.lower().startswith("groovy("):
            raise ExpressionError(
                "Groovy scripts are disabled (as in Pinot by default); use built-in functions"
            )
        try:
            self._tree = sqlglot.parse_one(stripped)
        except sqlglot.errors.ParseError as exc:
            raise ExpressionError(f"cannot parse {text!r}: {exc}") from exc
        self.columns = sorted({c.name for c in self._tree.find_all(exp.Column)})
        for node in self._tree.walk():
            if isinstance(node, exp.Anonymous) and node.name.lower() not in FUNCTIONS:
                raise ExpressionError(f"unknown function {node.name!r} in {text!r}")

    def evaluate(self, column: Callable[[str], pa.Array], num_rows: int) -> pa.Array:
        """Evaluate over a batch; ``column(name)`` returns an input column (all-null if
        absent). A constant result is broadcast to ``num_rows``."""
        out = self._eval(self._tree, column)
        if not isinstance(out, pa.Array | pa.ChunkedArray):
            out = pa.array([out] * num_rows) if out is not None else pa.nulls(num_rows)
        return out

    def _eval(self, node: exp.Expression, column):
        if isinstance(node, exp.Paren):
            return self._eval(node.this, column)
        if isinstance(node, exp.Column):
            return column(node.name)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            return float(node.this) if any(c in node.this for c in ".eE") else int(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return node.this
        if isinstance(node, exp.Neg):
            return pc.negate(self._eval(node.this, column))
        if isinstance(node, exp.Not):
            return pc.invert(self._eval(node.this, column))
        for cls, fn in _BINARY.items():
            if type(node) is cls:
                return fn(self._eval(node.this, column), self._eval(node.expression, column))
        if isinstance(node, exp.In):
            values = [self._eval(e, column) for e in node.expressions]
            return pc.is_in(self._eval(node.this, column), value_set=pa.array(values))
        if isinstance(node, exp.Between):
            x = self._eval(node.this, column)
            return pc.and_kleene(
                pc.greater_equal(x, self._eval(node.args["low"], column)),
                pc.less_equal(x, self._eval(node.args["high"], column)),
            )
        if isinstance(node, exp.Is):
            return pc.is_null(self._eval(node.this, column))
        if isinstance(node, exp.Cast):
            target = _CASTS.get(
                node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
            )
            if target is None:
                raise ExpressionError(f"unsupported cast in {self.text!r}")
            return pc.cast(self._eval(node.this, column), target)
        if isinstance(node, exp.Anonymous):
            args = [self._eval(a, column) for a in node.expressions]
            return FUNCTIONS[node.name.lower()](*args)
        name = _TYPED_FUNCTIONS.get(type(node))
        if name is not None:
            args = [self._eval(a, column) for a in _typed_args(node)]
            return FUNCTIONS[name](*args)
        raise ExpressionError(f"unsupported expression {node.sql()!r} in {self.text!r}")


def _typed_args(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Concat):
        return list(node.expressions)
    if isinstance(node, exp.Substring):
        return [
            a for a in (node.this, node.args.get("start"), node.args.get("length")) if a is not None
        ]
    if isinstance(node, exp.Round):
        return [a for a in (node.this, node.args.get("decimals")) if a is not None]
    args = [node.this]
    if node.args.get("expression") is not None:
        args.append(node.args["expression"])
    return args
