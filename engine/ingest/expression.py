"""Evaluates Pinot transform and filter expressions over Arrow record batches.

Expressions are parsed with sqlglot (so quoting, ``''`` escapes and operators follow SQL).
Every function call, and every operator that is a Pinot function (``+`` is ``plus``, ``=``
is ``equals``, ``||`` is ``concat``), is run by the scalar-function registry that the query
engine also uses (``engine.functions``), so a transform computes what the same SQL computes.
``Groovy({...})`` is rejected: Pinot disables Groovy by default.

Nulls exist only here (the query engine sees stored default values), so two rules live
here: a function is evaluated only on the rows where all its column arguments are present
and gives null elsewhere, as Pinot's ``InbuiltFunctionEvaluator`` does; AND, OR, NOT and
IS NULL use SQL's three-valued logic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp, parser
from sqlglot.dialects.dialect import Dialect

from engine.functions import FunctionArgumentError, ScalarFunction, lookup


class ExpressionError(ValueError):
    """An expression that cannot be parsed or names an unknown function."""


class _AnonymousCalls(Dialect):
    class Parser(parser.Parser):
        FUNCTIONS = {}  # every call stays exp.Anonymous: the name reaches the registry as written


_OPERATORS = {
    exp.Add: "plus", exp.Sub: "minus", exp.Mul: "times", exp.Div: "divide", exp.Mod: "mod",
    exp.EQ: "equals", exp.NEQ: "not_equals", exp.GT: "greater_than",
    exp.GTE: "greater_than_or_equal", exp.LT: "less_than", exp.LTE: "less_than_or_equal",
    exp.Like: "like", exp.RegexpLike: "regexp_like", exp.DPipe: "concat",
}  # fmt: skip
_LOGIC = {exp.And: "and", exp.Or: "or"}
_ARROW_TYPES = {
    "INT": pa.int32(), "LONG": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(), "STRING": pa.string(), "BYTES": pa.binary(), "TIMESTAMP": pa.int64(),
}  # fmt: skip

# A compiled node: ("column", name) | ("literal", value) | ("call", ScalarFunction, [nodes])
# | ("logic", "and"|"or"|"not", [nodes]) | ("is_null", [node]) | ("negate", [node])
Node = tuple


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
            tree = sqlglot.parse_one(stripped, read=_AnonymousCalls)
        except sqlglot.errors.SqlglotError as exc:
            raise ExpressionError(f"cannot parse {text!r}: {exc}") from exc
        self.columns = sorted({c.name for c in tree.find_all(exp.Column)})
        self._root = self._compile(tree)
        self._check_parameters()

    def evaluate(self, column: Callable[[str], pa.Array], num_rows: int) -> pa.Array:
        """Evaluate over a batch; ``column(name)`` returns an input column (all-null if
        absent). A constant result is broadcast to ``num_rows``."""
        out = _evaluate(self._root, column)
        if not isinstance(out, pa.Array | pa.ChunkedArray):
            out = pa.array([out] * num_rows) if out is not None else pa.nulls(num_rows)
        return out

    def _check_parameters(self) -> None:
        """Run once on no rows, so that a bad unit, format, pattern or JSON path is a config
        error now rather than a failure on every row later. Only the functions' argument
        errors count: other failures on an empty, untyped column say nothing."""
        empty = pa.array([], pa.string())
        try:
            self.evaluate(lambda name: empty, 0)
        except FunctionArgumentError as exc:
            raise ExpressionError(f"{exc} in {self.text!r}") from exc
        except (pa.ArrowException, ValueError, TypeError, ArithmeticError):
            pass

    # ---- sqlglot tree -> compiled nodes --------------------------------------------------

    def _call(self, name: str, args: list) -> Node:
        fn = lookup(name)
        if fn is None:
            raise ExpressionError(f"unknown function {name!r} in {self.text!r}")
        problem = fn.arity_error(len(args))
        if problem is not None:
            raise ExpressionError(f"{problem} in {self.text!r}")
        return ("call", fn, args)

    def _compile(self, node: exp.Expression) -> Node:
        c = self._compile
        if isinstance(node, exp.Paren):
            return c(node.this)
        if isinstance(node, exp.Column):
            return ("column", node.name)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return ("literal", node.this)
            text = node.this
            return ("literal", float(text) if any(ch in text for ch in ".eE") else int(text))
        if isinstance(node, exp.Null):
            return ("literal", None)
        if isinstance(node, exp.Boolean):
            return ("literal", bool(node.this))
        if isinstance(node, exp.Neg):
            return ("negate", [c(node.this)])
        if isinstance(node, exp.Not):
            return ("logic", "not", [c(node.this)])
        if type(node) in _LOGIC:
            return ("logic", _LOGIC[type(node)], [c(node.this), c(node.expression)])
        if type(node) in _OPERATORS:
            return self._call(_OPERATORS[type(node)], [c(node.this), c(node.expression)])
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return ("is_null", [c(node.this)])
        if isinstance(node, exp.In) and node.args.get("query") is None:
            return self._call("in", [c(node.this), *(c(e) for e in node.expressions)])
        if isinstance(node, exp.Between):
            return self._call("between", [c(node.this), c(node.args["low"]), c(node.args["high"])])
        if isinstance(node, exp.Cast):
            to = node.args["to"]
            name = to.sql() if to.this == exp.DataType.Type.USERDEFINED else to.this.name
            return self._call("cast", [c(node.this), ("literal", name.upper())])
        if isinstance(node, exp.Case | exp.If):
            return self._call("case", self._case_args(node))
        if isinstance(node, exp.Anonymous):
            return self._call(str(node.this), [c(a) for a in node.expressions])
        if isinstance(node, exp.Func):  # SUBSTRING, TRIM ...: sqlglot's own nodes
            args = []
            for key in node.arg_types:
                value = node.args.get(key)
                for v in value if isinstance(value, list) else [] if value is None else [value]:
                    args.append(c(v))
            return self._call(node.sql_name(), args)
        raise ExpressionError(f"unsupported expression {node.sql()!r} in {self.text!r}")

    def _case_args(self, node: exp.Case | exp.If) -> list:
        c = self._compile
        if isinstance(node, exp.If):
            false = node.args.get("false")
            return [c(node.this), c(node.args["true"]), c(false) if false else ("literal", None)]
        args = []
        for branch in node.args.get("ifs") or []:
            cond = c(branch.this)
            if node.this is not None:  # CASE x WHEN v THEN ...
                cond = self._call("equals", [c(node.this), cond])
            args += [cond, c(branch.args["true"])]
        default = node.args.get("default")
        return [*args, c(default) if default is not None else ("literal", None)]


# ---- evaluation -------------------------------------------------------------------------


def _evaluate(node: Node, column):
    kind = node[0]
    if kind == "column":
        return column(node[1])
    if kind == "literal":
        return node[1]
    if kind == "call":
        return _apply(node[1], [_evaluate(a, column) for a in node[2]])
    args = [_evaluate(a, column) for a in node[-1]]
    if kind == "is_null":
        value = args[0]
        return pc.is_null(value) if isinstance(value, pa.Array) else value is None
    if kind == "negate":
        return pc.negate(args[0]) if isinstance(args[0], pa.Array) else -args[0]
    return _logic(node[1], args)


def _logic(op: str, args: list):
    """AND / OR / NOT with SQL's three-valued logic (false AND null is false)."""
    args = [pa.scalar(a, pa.bool_()) if not isinstance(a, pa.Array) else a for a in args]
    args = [a if a.type == pa.bool_() else pc.cast(a, pa.bool_()) for a in args]
    if op == "not":
        (value,) = args
        return pc.invert(value)
    out = args[0]
    for a in args[1:]:
        out = pc.and_kleene(out, a) if op == "and" else pc.or_kleene(out, a)
    return out


def _apply(fn: ScalarFunction, args: list):
    """Run ``fn`` on the rows where every column argument is present; null elsewhere."""
    arrays = [a for a in args if isinstance(a, pa.Array)]
    if not arrays:
        return fn.impl(*args)  # constant folding: literals only
    present = None
    for a in arrays:
        if a.null_count:
            valid = a.is_valid()
            present = valid if present is None else pc.and_(present, valid)
    result_type = _ARROW_TYPES.get(_result_type(fn, len(args)))
    if present is not None and not pc.any(present).as_py():
        return pa.nulls(len(arrays[0]), result_type or pa.null())
    convert = _to_arrow_column if fn.arrow else _to_numpy
    values = [
        convert(a if present is None else a.filter(present)) if isinstance(a, pa.Array) else a
        for a in args
    ]
    rows = len(values[args.index(arrays[0])])
    result = _to_arrow(fn.impl(*values), result_type, rows)
    if present is None:
        return result
    positions = np.cumsum(present.to_numpy(zero_copy_only=False)) - 1
    return pc.take(result, pa.array(positions, mask=~present.to_numpy(zero_copy_only=False)))


def _result_type(fn: ScalarFunction, n_args: int) -> str:
    result = fn.output_type(["UNKNOWN"] * n_args)
    return result if isinstance(result, str) else "UNKNOWN"


def _to_numpy(arr: pa.Array) -> np.ndarray:
    """A column as the registry's functions take it: numbers as numpy numbers, timestamps as
    epoch ms, text and nested values as object arrays."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _to_numpy(arr.dictionary_decode())
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        arr = pc.cast(arr, pa.timestamp("ms", tz=getattr(t, "tz", None))).view(pa.int64())
    elif pa.types.is_map(t):
        return _objects([None if v is None else dict(v) for v in arr.to_pylist()])
    elif pa.types.is_nested(t) or pa.types.is_null(t):
        return _objects(arr.to_pylist())
    return arr.to_numpy(zero_copy_only=False)


def _to_arrow_column(arr: pa.Array):
    """A column for a function that reads Arrow: flat values stay Arrow (no copy)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _to_arrow_column(arr.dictionary_decode())
    flat = pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
    return arr if flat or pa.types.is_boolean(t) else _to_numpy(arr)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _to_arrow(result, arrow_type: pa.DataType | None, rows: int) -> pa.Array:
    if isinstance(result, pa.Array):
        return (
            result if arrow_type is None or result.type == arrow_type else result.cast(arrow_type)
        )
    if np.ndim(result) == 0:  # a function of literals only, applied per row
        result = np.full(rows, result, dtype=object if isinstance(result, str | bytes) else None)
    if arrow_type is not None:
        return pa.array(result, arrow_type)
    return pa.array(result.tolist() if result.dtype == object else result)
