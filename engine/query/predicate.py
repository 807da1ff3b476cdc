"""Predicates of a WHERE clause, before any index is read: each leaf normalized with its
column on the left and its column-free operands folded to literals (``to_leaf``), and the
dictionary ids it accepts in one segment (``match_ids``), kept per segment in the decoded
cache. ``engine.query.filter`` picks the access path and turns the ids into docs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.query.errors import QueryExecutionError
from engine.query.evaluate import evaluate
from engine.query.expressions import (
    COMPARISONS,
    Expression,
    Function,
    Identifier,
    Literal,
    columns_of,
    typed_key,
)
from engine.query.segment_view import SegmentView

_FLIP = {"less_than": "greater_than", "greater_than": "less_than",
         "less_than_or_equal": "greater_than_or_equal", "greater_than_or_equal": "less_than_or_equal",
         "equals": "equals", "not_equals": "not_equals"}  # fmt: skip
RANGE_OPS = {"less_than", "less_than_or_equal", "greater_than", "greater_than_or_equal", "between"}
EXCLUSIVE = {"not_equals": "equals", "not_in": "in"}
NULL_OPS = frozenset({"is_null", "is_not_null"})
_OP_LABEL = {"equals": "EQ", "not_equals": "NOT_EQ", "in": "IN", "not_in": "NOT_IN", "like": "LIKE",
             "regexp_like": "REGEXP_LIKE", "is_null": "IS_NULL", "is_not_null": "IS_NOT_NULL"}  # fmt: skip


@dataclass(frozen=True)
class Leaf:
    """One predicate, normalized so the column side is on the left."""

    expr: Function
    op: str
    lhs: Expression
    operands: tuple  # literal values
    column: str | None  # the only column read by lhs, if exactly one

    @property
    def exclusive(self) -> bool:
        return self.op in EXCLUSIVE

    @property
    def label(self) -> str:
        return "RANGE" if self.op in RANGE_OPS else _OP_LABEL.get(self.op, self.op.upper())


def fold_constant(expr: Expression) -> Expression:
    """A column-free call such as ``AGO('P1D')`` or ``NOW() - 3600000`` evaluated to a
    literal, so the predicate around it can use an index. Done per execution, never cached,
    because NOW() moves."""
    if not isinstance(expr, Function) or columns_of(expr):
        return expr
    value = evaluate(expr, lambda e: None, 1)[0]
    return Literal(value.item() if hasattr(value, "item") else value)


def to_leaf(expr: Function) -> Leaf:
    """The predicate as (op, lhs, literal operands, column). A predicate whose arguments
    are plain columns and literals is the same leaf on every query and segment: kept;
    one with a constant call (``NOW()``) is folded afresh each time."""
    if all(isinstance(a, Identifier | Literal) for a in expr.args):
        try:
            return _plain_leaf(expr)
        except TypeError:  # an unhashable literal
            pass
    return _make_leaf(expr)


@lru_cache(maxsize=8192)
def _plain_leaf(expr: Function) -> Leaf:
    return _make_leaf(expr)


def _make_leaf(expr: Function) -> Leaf:
    op, args = expr.name, [fold_constant(a) for a in expr.args]
    if op in COMPARISONS and isinstance(args[0], Literal) and not isinstance(args[1], Literal):
        op, args = _FLIP[op], [args[1], args[0]]
    lhs, rest = args[0], args[1:]
    operands = tuple(a.value for a in rest if isinstance(a, Literal))
    if len(operands) != len(rest):
        return Leaf(expr, op, expr, (), None)  # column on both sides: generic scan
    cols = columns_of(lhs)
    return Leaf(
        Function(op, tuple(args)), op, lhs, operands, next(iter(cols)) if len(cols) == 1 else None
    )


def typed_literals(leaf: Leaf, meta) -> Leaf:
    """String literals compared with a numeric column converted to its stored form, e.g.
    ``ts > '2014-01-01 00:00:00'`` on a TIMESTAMP column becomes epoch millis."""
    if not any(isinstance(v, str) for v in leaf.operands):
        return leaf
    try:
        values = [meta.data_type.to_stored(v) if isinstance(v, str) else v for v in leaf.operands]
    except (ValueError, TypeError, ArithmeticError) as err:
        raise QueryExecutionError(
            f"Cannot compare column '{leaf.column}' with {leaf.operands}: {err}"
        ) from err
    args = (leaf.lhs, *(Literal(v) for v in values))
    return Leaf(Function(leaf.op, args), leaf.op, leaf.lhs, tuple(values), leaf.column)


def memo_key(kind: str, leaf: Leaf) -> tuple | None:
    """The per-segment cache key of what ``leaf`` resolves to; None if it cannot be hashed."""
    key = (kind, leaf.op, leaf.lhs, typed_key(leaf.operands))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def match_ids(view: SegmentView, leaf: Leaf):
    """Dictionary ids the (inclusive form of the) predicate accepts: ("range", s, e),
    ("ids", sorted array) or None when no id matches. Kept per segment and predicate in
    the decoded cache: a repeated query's predicate resolves to the same ids in the same
    immutable dictionary, and resolving costs dictionary searches (or, for an expression
    or a LIKE, an evaluation over the whole dictionary) on every query otherwise."""
    key = memo_key("match", leaf)
    cached = view.memo(key) if key is not None else None
    if cached is None:
        cached = (_resolve_ids(view, leaf),)
        if key is not None:
            view.remember(key, cached)
    return cached[0]


def _resolve_ids(view: SegmentView, leaf: Leaf):
    reader = view.reader(leaf.column)
    dictionary = reader.dictionary
    op = EXCLUSIVE.get(leaf.op, leaf.op)
    try:
        if isinstance(leaf.lhs, Identifier) and op in RANGE_OPS | {"equals", "in"}:
            values = leaf.operands
            if op == "equals" or op == "in":
                ids = sorted({i for i in (dictionary.index_of(v) for v in values) if i >= 0})
                return ("ids", np.asarray(ids, dtype=np.int64)) if ids else None
            if op == "between":
                start, end = dictionary.id_range(values[0], values[1], True, True)
            elif op in ("less_than", "less_than_or_equal"):
                start, end = dictionary.id_range(None, values[0], True, op == "less_than_or_equal")
            else:
                start, end = dictionary.id_range(
                    values[0], None, op == "greater_than_or_equal", True
                )
            return ("range", start, end) if end > start else None
    except (ValueError, TypeError, ArithmeticError) as err:
        raise QueryExecutionError(
            f"Cannot compare column '{leaf.column}' with {leaf.operands}: {err}"
        ) from err
    inclusive = Function(op, leaf.expr.args) if leaf.exclusive else leaf.expr
    lut = evaluate(
        inclusive,
        {Identifier(leaf.column): view.dictionary(leaf.column)}.get,
        len(dictionary),
    )
    ids = np.flatnonzero(np.asarray(lut, dtype=bool))
    return ("ids", ids) if len(ids) else None


def match_lut(match, card: int) -> np.ndarray:
    lut = np.zeros(card, dtype=bool)
    if match[0] == "range":
        lut[match[1] : match[2]] = True
    else:
        lut[match[1]] = True
    return lut


def match_list(match) -> np.ndarray:
    return np.arange(match[1], match[2]) if match[0] == "range" else match[1]
