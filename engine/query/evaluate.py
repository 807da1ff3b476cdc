"""Evaluate an expression over arrays.

``evaluate(expr, lookup, n)`` walks the tree; ``lookup(expr)`` returns an array for any node
the caller already has (a column, a group-by key, a finished aggregation) or None. Literals
stay Python scalars so functions can treat them as parameters; the top-level result is
broadcast to ``n`` rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine.query.functions as functions
from engine.functions import FunctionArgumentError
from engine.query.errors import QueryExecutionError, QueryValidationError
from engine.query.expressions import Expression, Function, Identifier, Literal

Lookup = Callable[[Expression], "np.ndarray | None"]


def evaluate(expr: Expression, lookup: Lookup, n: int) -> np.ndarray:
    """The value of ``expr`` for ``n`` rows as a numpy array."""
    value = _eval(expr, lookup)
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
    fn = functions.check_call(expr.name, len(expr.args))
    args = [_eval(a, lookup) for a in expr.args]
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
