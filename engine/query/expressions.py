"""The typed expression tree a query plan is made of.

Three node kinds: ``Identifier`` (a column, or ``*`` inside COUNT), ``Literal`` and
``Function``. Predicates and boolean connectives are functions too (``equals``, ``in``,
``and`` ...), so one evaluator and one printer serve SELECT, WHERE and HAVING.

``str(expr)`` prints the expression the way Pinot names result columns:
lower-case function names, arguments joined by ``,`` and string literals in single quotes,
e.g. ``sum(ArrDelay)``, ``count(*)``, ``datetrunc('DAY',ts)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str

    def __str__(self) -> str:
        return self.name


def typed_key(value: object) -> object:
    """A value with its type beside it: Python counts 1, 1.0 and True equal, and a literal
    1 must never be taken for 1.0 or true by a cache or memo keyed on expressions."""
    if isinstance(value, tuple):
        return (tuple, tuple(typed_key(v) for v in value))
    if isinstance(value, list):  # stays a list: unhashable, so never memoised
        return (list, [typed_key(v) for v in value])
    return (type(value), value)


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    value: object  # int, float, str, bool or None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Literal):
            return NotImplemented
        return typed_key(self.value) == typed_key(other.value)

    def __hash__(self) -> int:
        return hash(typed_key(self.value))  # TypeError for an unhashable value, as before

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        if self.value is None:
            return "null"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Function:
    name: str  # canonical lower-case name
    args: tuple[Expression, ...]
    # The hash, kept after the first call: plans are looked up and memoised by their
    # expressions on every query and segment, and a dataclass re-hashes the whole subtree
    # each time otherwise.
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash((self.name, self.args))  # TypeError for an unhashable literal
            object.__setattr__(self, "_hash", cached)
        return cached

    def __str__(self) -> str:
        if self.name == "filter" and len(self.args) == 2:
            return f"{self.args[0]} FILTER(WHERE {to_sql(self.args[1])})"
        return f"{self.name}({','.join(str(a) for a in self.args)})"


Expression = Identifier | Literal | Function

STAR = Identifier("*")

# Predicate function names (all return booleans).
COMPARISONS = {"equals", "not_equals", "less_than", "less_than_or_equal", "greater_than",
               "greater_than_or_equal"}  # fmt: skip
PREDICATES = COMPARISONS | {"in", "not_in", "between", "like", "regexp_like", "is_null",
                            "is_not_null"}  # fmt: skip
CONNECTIVES = {"and", "or", "not"}


def walk(expr: Expression) -> Iterator[Expression]:
    """Every node of ``expr``, parents before children."""
    yield expr
    if isinstance(expr, Function):
        for arg in expr.args:
            yield from walk(arg)


def columns_of(expr: Expression) -> frozenset[str]:
    """Names of the columns ``expr`` reads (``*`` excluded)."""
    try:
        return _columns_of(expr)
    except TypeError:  # an unhashable literal somewhere in the tree
        return _walk_columns(expr)


@lru_cache(maxsize=8192)
def _columns_of(expr: Expression) -> frozenset[str]:
    # asked for the same plan expressions on every query and segment
    return _walk_columns(expr)


def _walk_columns(expr: Expression) -> frozenset[str]:
    return frozenset(n.name for n in walk(expr) if isinstance(n, Identifier) and n.name != "*")


def folds_constants(expr: Expression | None) -> bool:
    """True when ``expr`` holds a call on no column (``NOW()``, ``ago('P1D')``): such a
    filter resolves differently from one execution to the next, so it is never memoised."""
    if expr is None:
        return False
    try:
        return _folds_constants(expr)
    except TypeError:  # an unhashable literal: treat as changing
        return True


@lru_cache(maxsize=8192)
def _folds_constants(expr: Expression) -> bool:
    return any(isinstance(n, Function) and not columns_of(n) for n in walk(expr))


def replace(expr: Expression, mapping: dict[Expression, Expression]) -> Expression:
    """``expr`` with every sub-expression found in ``mapping`` swapped for its value."""
    if expr in mapping:
        return mapping[expr]
    if isinstance(expr, Function):
        return Function(expr.name, tuple(replace(a, mapping) for a in expr.args))
    return expr


_SQL_INFIX = {"equals": "=", "not_equals": "!=", "less_than": "<", "less_than_or_equal": "<=",
              "greater_than": ">", "greater_than_or_equal": ">=", "plus": "+", "minus": "-",
              "times": "*", "divide": "/", "and": "AND", "or": "OR"}  # fmt: skip


def to_sql(expr: Expression) -> str:
    """``expr`` printed as SQL (for EXPLAIN and messages): ``Carrier = 'AA'``."""
    if not isinstance(expr, Function):
        return str(expr)
    name, args = expr.name, expr.args
    if name in _SQL_INFIX and len(args) == 2:
        return f"{to_sql(args[0])} {_SQL_INFIX[name]} {to_sql(args[1])}"
    if name in ("in", "not_in"):
        values = ", ".join(to_sql(a) for a in args[1:])
        return f"{to_sql(args[0])} {'NOT IN' if name == 'not_in' else 'IN'} ({values})"
    if name == "between":
        return f"{to_sql(args[0])} BETWEEN {to_sql(args[1])} AND {to_sql(args[2])}"
    if name in ("like", "regexp_like"):
        return (
            f"{name.upper()}({to_sql(args[0])}, {to_sql(args[1])})"
            if name != "like"
            else f"{to_sql(args[0])} LIKE {to_sql(args[1])}"
        )
    if name == "not":
        return f"NOT ({to_sql(args[0])})"
    if name in ("is_null", "is_not_null"):
        return f"{to_sql(args[0])} IS {'NOT ' if name == 'is_not_null' else ''}NULL"
    return f"{name.upper()}({', '.join(to_sql(a) for a in args)})"
