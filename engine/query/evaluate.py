"""Evaluate an expression over arrays.

``evaluate(expr, lookup, n)`` walks the tree; ``lookup(expr)`` returns an array for any node
the caller already has (a column, a group-by key, a finished aggregation) or None. Literals
stay Python scalars so functions can treat them as parameters; the top-level result is
broadcast to ``n`` rows.

``evaluate_nullable`` also carries which rows are SQL NULL. Nulls come from the caller's
``null_lookup`` (a column's null value vector, a null group key, an aggregation of no
values) and from the null forms: IS [NOT] NULL, COALESCE and NULLIF read them, a NULL
literal is one. Every other function is computed on the stored values and is null wherever
an argument is (Pinot's ``BaseTransformFunction.getNullBitmap``). With ``sql_nulls``
(``enableNullHandling``) AND, OR, NOT and CASE follow SQL's three-valued logic; without it
(Pinot's basic null support) they are two-valued over stored values, and only the null forms
see nulls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import lru_cache

import numpy as np

import engine.query.functions as functions
from engine.functions import FunctionArgumentError
from engine.query.errors import QueryExecutionError, QueryValidationError
from engine.query.expressions import Expression, Function, Identifier, Literal, walk

Lookup = Callable[[Expression], "np.ndarray | None"]
NullLookup = Callable[[Expression], "np.ndarray | None"]

# Functions that read nulls rather than propagate them.
NULL_FORMS = frozenset({"is_null", "is_not_null", "coalesce", "nullif"})
# With SQL nulls these decide their own null rows too (three-valued logic, CASE's branches).
_THREE_VALUED = frozenset({"and", "or", "not", "case"})
NULL_FORM_ARITY = {"is_null": (1, 1), "is_not_null": (1, 1), "coalesce": (1, 10_000),
                   "nullif": (2, 2)}  # fmt: skip


def check_null_form(name: str, n_args: int) -> None:
    """QueryValidationError (700) when a null form is called with a wrong argument count."""
    low, high = NULL_FORM_ARITY[name]
    if not low <= n_args <= high:
        expected = str(low) if low == high else f"at least {low}"
        raise QueryValidationError(
            f"Function {name.upper()} expects {expected} argument(s), got {n_args}"
        )


def evaluate(expr: Expression, lookup: Lookup, n: int) -> np.ndarray:
    """The value of ``expr`` for ``n`` rows as a numpy array (no row is null: IS NULL is
    false, COALESCE is its first argument)."""
    return _broadcast(_eval(expr, lookup), n)


def _broadcast(value, n: int) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        dtype = object if isinstance(value, str) or value is None else None
        return np.full(n, value, dtype=dtype)
    if value.ndim == 0:
        return np.full(n, value.item())
    return value


def _eval(expr: Expression, lookup: Lookup):
    found = lookup(expr)
    if found is not None:
        return found
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Identifier):
        raise QueryValidationError(f"Unknown columnName '{expr.name}' found in the query")
    assert isinstance(expr, Function)
    if expr.name in NULL_FORMS:
        return _eval_n(expr, lookup, _no_nulls, False)[0]
    fn = functions.check_call(expr.name, len(expr.args))
    return call(expr, fn, [_eval(a, lookup) for a in expr.args])


def call(expr: Function, fn, args: list):
    """``fn`` (the registry's function of ``expr``) on evaluated ``args``, its errors reported
    as Pinot reports them (a bad parameter 700, a bad value 200)."""
    try:
        return fn.impl(*args)
    except FunctionArgumentError as err:  # a bad unit, format, pattern or path: code 700
        raise QueryValidationError(str(err)) from err
    except QueryExecutionError as err:
        if err.message.startswith("Error evaluating"):
            raise
        raise QueryExecutionError(f"Error evaluating {expr}: {err.message}") from err
    except (ValueError, TypeError, OverflowError, ArithmeticError) as err:
        raise QueryExecutionError(f"Error evaluating {expr}: {err}") from err


# ---- which evaluation an expression needs ---------------------------------------------------


def reads_nulls(expr: Expression) -> bool:
    """Whether ``expr`` holds a null form (IS [NOT] NULL, COALESCE, NULLIF): its value then
    depends on which rows are null, even without ``enableNullHandling``."""
    try:
        return _reads_nulls(expr)
    except TypeError:  # an unhashable literal
        return any(isinstance(n, Function) and n.name in NULL_FORMS for n in walk(expr))


@lru_cache(maxsize=8192)
def _reads_nulls(expr: Expression) -> bool:
    return any(isinstance(n, Function) and n.name in NULL_FORMS for n in walk(expr))


def propagates_nulls(expr: Expression) -> bool:
    """Whether ``expr`` is null exactly where one of its columns is (no null form, no
    three-valued connective, no CASE, no NULL literal): then a column's null rows need not
    be evaluated to know the expression's."""
    try:
        return _propagates_nulls(expr)
    except TypeError:
        return _plainly_propagates(expr)


@lru_cache(maxsize=8192)
def _propagates_nulls(expr: Expression) -> bool:
    return _plainly_propagates(expr)


def _plainly_propagates(expr: Expression) -> bool:
    for node in walk(expr):
        if isinstance(node, Function) and (node.name in NULL_FORMS or node.name in _THREE_VALUED):
            return False
        if isinstance(node, Literal) and node.value is None:
            return False
    return True


def needs_nullable(expr: Expression, sql_nulls: bool) -> bool:
    """Whether ``expr``'s values (not only its null rows) differ from ``evaluate``'s: with SQL
    nulls, anything that does not plainly propagate nulls; without, the null forms."""
    return not propagates_nulls(expr) if sql_nulls else reads_nulls(expr)


# ---- null-aware evaluation -------------------------------------------------------------------


def _no_nulls(expr: Expression) -> None:
    return None


def evaluate_nullable(
    expr: Expression, lookup: Lookup, null_lookup: NullLookup, n: int, *, sql_nulls: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, nulls) of ``expr`` for ``n`` rows: ``nulls`` a bool array, True where the
    value is NULL, or None when no row is. Values of null rows are unspecified (the stored
    default, or None in an object array)."""
    value, nulls = _eval_n(expr, lookup, null_lookup, sql_nulls)
    values = _broadcast(value, n)
    if nulls is None or (not isinstance(nulls, np.ndarray) and not nulls):
        return values, None
    mask = np.broadcast_to(np.asarray(nulls, dtype=bool), (n,))
    if not mask.any():
        return values, None
    return values, np.array(mask) if not mask.flags.writeable else mask


def _or(a, b):
    """The union of two null markers (None: none; a bool: all or none; or a mask)."""
    if a is None or (not isinstance(a, np.ndarray) and not a):
        return b
    if b is None or (not isinstance(b, np.ndarray) and not b):
        return a
    return np.logical_or(a, b)


def _mask(nulls):
    """A null marker as a bool (scalar or array) that numpy can combine."""
    return False if nulls is None else nulls


def _eval_n(expr: Expression, lookup: Lookup, null_lookup: NullLookup, sql_nulls: bool):
    value, nulls = _eval_node(expr, lookup, null_lookup, sql_nulls)
    # a value of one row for every row stays a scalar, as a literal is, for the functions
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(nulls, np.ndarray) and nulls.ndim == 0:
        nulls = bool(nulls)
    return value, nulls


def _eval_node(expr: Expression, lookup: Lookup, null_lookup: NullLookup, sql_nulls: bool):
    found = lookup(expr)
    if found is not None:
        return found, null_lookup(expr)
    if isinstance(expr, Literal):
        return expr.value, (True if expr.value is None else None)
    if isinstance(expr, Identifier):
        raise QueryValidationError(f"Unknown columnName '{expr.name}' found in the query")
    assert isinstance(expr, Function)
    name = expr.name

    def args():
        return [_eval_n(a, lookup, null_lookup, sql_nulls) for a in expr.args]

    if name in NULL_FORMS:
        check_null_form(name, len(expr.args))
        if name in ("is_null", "is_not_null"):
            ((_, nulls),) = args()
            is_null = np.asarray(_mask(nulls), dtype=bool)
            return (is_null if name == "is_null" else ~is_null), None
        if name == "coalesce":
            return _coalesce(args())
        return _nullif(expr, args(), sql_nulls)
    if name == "case":
        return _case(expr, args(), sql_nulls)
    if sql_nulls and name in _THREE_VALUED:
        return _three_valued(expr, args())
    parts = args()
    nulls = None
    for value, part_nulls in parts:
        if value is None and part_nulls is True:  # a NULL literal: the call is NULL
            return None, True
        nulls = _or(nulls, part_nulls)
    fn = functions.check_call(name, len(expr.args))
    return call(expr, fn, [value for value, _ in parts]), nulls


def _coalesce(parts: list):
    """The first argument that is not NULL, row by row; NULL where every one is."""
    value, nulls = parts[-1]
    for v, v_nulls in reversed(parts[:-1]):
        if v_nulls is None or (not isinstance(v_nulls, np.ndarray) and not v_nulls):
            value, nulls = v, None  # never NULL: it wins on every row
        elif isinstance(v_nulls, np.ndarray):
            value = v if value is None else np.where(v_nulls, value, v)
            nulls = v_nulls if nulls is True else np.logical_and(v_nulls, _mask(nulls))
        # else: NULL on every row, the later arguments stand
    return value, nulls


def _nullif(expr: Function, parts: list, sql_nulls: bool):
    """NULLIF(a, b): NULL where ``a = b``, else ``a``. Without SQL nulls the value stays."""
    (a, a_nulls), (b, b_nulls) = parts
    if not sql_nulls or a is None:
        return a, a_nulls
    if b is None:
        return a, a_nulls
    equal = np.asarray(call(expr, functions.check_call("equals", 2), [a, b]), dtype=bool)
    matched = np.logical_and(equal, np.logical_not(_mask(b_nulls)))
    return a, _or(a_nulls, matched)


def _is_rows(x) -> bool:
    return isinstance(x, np.ndarray) and x.ndim > 0


def _truth(part) -> tuple:
    """(true, null) bool markers of a boolean argument."""
    value, nulls = part
    null = np.asarray(_mask(nulls), dtype=bool)
    if value is None:
        return np.asarray(False), np.asarray(True)
    return np.logical_and(np.asarray(value, dtype=bool), np.logical_not(null)), null


def _three_valued(expr: Function, parts: list):
    name = expr.name
    truths = [_truth(p) for p in parts]
    if name == "not":
        true, null = truths[0]
        return np.logical_not(np.logical_or(true, null)), null
    falses = [np.logical_not(np.logical_or(t, n)) for t, n in truths]
    if name == "and":
        true = functools.reduce(np.logical_and, [t for t, _ in truths])
        false = functools.reduce(np.logical_or, falses)
    else:
        true = functools.reduce(np.logical_or, [t for t, _ in truths])
        false = functools.reduce(np.logical_and, falses)
    return true, np.logical_not(np.logical_or(true, false))


def _case(expr: Function, parts: list, sql_nulls: bool):
    """CASE: the branch taken gives the value and its nulls, and no branch without ELSE
    gives NULL. With SQL nulls a condition that is NULL counts as false (Pinot's
    CaseTransformFunction); without, conditions are their stored-value answers."""
    conditions = [_truth(p)[0] if sql_nulls else p[0] for p in parts[:-1:2]]
    branches = parts[1:-1:2]
    default, default_nulls = parts[-1]
    arrays = [x for x in [*conditions, *(v for v, _ in parts)] if _is_rows(x)]
    if not arrays:  # one answer for every row
        for condition, branch in zip(conditions, branches, strict=True):
            if condition:
                return branch
        return default, default_nulls
    fn = functions.check_call("case", len(parts))
    args = []
    for condition, (value, _) in zip(conditions, branches, strict=True):
        args += [condition if _is_rows(condition) else bool(condition), value]
    value = call(expr, fn, [*args, default])
    n = len(arrays[0])
    conds = [np.broadcast_to(c, (n,)) for c in conditions]
    choices = [np.broadcast_to(np.asarray(_mask(nl), dtype=bool), (n,)) for _, nl in branches]
    otherwise = np.broadcast_to(np.asarray(_mask(default_nulls), dtype=bool), (n,))
    return value, np.select(conds, choices, default=otherwise) if conds else otherwise
