"""The scalar (transform) function registry.

A scalar function maps numpy arrays (or Python scalars, for literal arguments) to a numpy
array of the same length. Each entry states its argument count and result type so the
planner can reject a bad call (code 700) and name the result column's type before running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.query.errors import QueryValidationError

NUMERIC_TYPES = {"INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "TIMESTAMP", "BOOLEAN"}


@dataclass(frozen=True)
class ScalarFunction:
    name: str
    impl: Callable
    min_args: int
    max_args: int
    # fixed result type, or a callable (argument types) -> result type
    result_type: str | Callable[[list[str]], str]

    def output_type(self, arg_types: list[str]) -> str:
        if callable(self.result_type):
            return self.result_type(arg_types)
        return self.result_type


_REGISTRY: dict[str, ScalarFunction] = {}


def register(names: str | tuple[str, ...], min_args: int, max_args: int, result_type):
    """Decorator: register ``impl`` under each of ``names`` (case-insensitive, underscores
    ignored as Pinot does: ``to_epoch_days`` == ``toEpochDays``)."""

    def wrap(impl):
        for name in (names,) if isinstance(names, str) else names:
            key = canonical(name)
            _REGISTRY[key] = ScalarFunction(key, impl, min_args, max_args, result_type)
        return impl

    return wrap


def canonical(name: str) -> str:
    return name.lower().replace("_", "")


def lookup(name: str) -> ScalarFunction | None:
    return _REGISTRY.get(canonical(name))


def check_call(name: str, n_args: int) -> ScalarFunction:
    """The function ``name`` called with ``n_args`` arguments; raises QueryValidationError
    (code 700) for an unknown function or a wrong argument count."""
    fn = lookup(name)
    if fn is None:
        raise QueryValidationError(
            f"Unsupported function: {name.upper()} (no such transform or aggregation function)"
        )
    if not fn.min_args <= n_args <= fn.max_args:
        expected = (
            str(fn.min_args) if fn.min_args == fn.max_args else f"{fn.min_args} to {fn.max_args}"
        )
        raise QueryValidationError(
            f"Function {name.upper()} expects {expected} argument(s), got {n_args}"
        )
    return fn
