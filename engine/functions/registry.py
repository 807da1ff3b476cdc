"""The scalar-function registry: one entry per Pinot function name.

An entry maps numpy arrays (columns) and Python scalars (literal arguments) to a numpy array
of the same length, or to a scalar when every argument is a scalar. It carries its argument
count and its Pinot result type, so the query planner can reject a bad call and name the
result column's type before running. Names are matched as Pinot's ``FunctionRegistry``
matches them: case-insensitively and ignoring underscores (``to_epoch_days`` is
``toEpochDays``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.common.errors import EngineError


class FunctionArgumentError(EngineError, ValueError):
    """A parameter of a call is unusable whatever the data: an unknown time unit, format,
    pattern, JSON path or result type. The query engine reports it as a validation error."""


class FunctionValueError(EngineError, ValueError):
    """A value in the data cannot be computed on (text that is not a number, a date that
    does not match its pattern). The query engine reports it as an execution error."""


@dataclass(frozen=True)
class ScalarFunction:
    name: str
    impl: Callable
    min_args: int
    max_args: int
    # fixed result type, or a callable (argument types) -> result type
    result_type: str | Callable[[list[str]], str]
    # also takes Arrow arrays for its column arguments, and then answers with one (ingestion
    # reads Arrow: text functions skip two conversions of every string)
    arrow: bool = False

    def output_type(self, arg_types: list[str]) -> str:
        if callable(self.result_type):
            return self.result_type(arg_types)
        return self.result_type

    def arity_error(self, n_args: int) -> str | None:
        """Why ``n_args`` arguments do not fit, or None when they do."""
        if self.min_args <= n_args <= self.max_args:
            return None
        expected = (
            str(self.min_args)
            if self.min_args == self.max_args
            else f"{self.min_args} to {self.max_args}"
        )
        return f"Function {self.name.upper()} expects {expected} argument(s), got {n_args}"


_REGISTRY: dict[str, ScalarFunction] = {}


def register(
    names: str | tuple[str, ...], min_args: int, max_args: int, result_type, *, arrow=False
):
    """Decorator: register ``impl`` under each of ``names``. A name registered twice is a
    programming error, so it fails at import."""

    def wrap(impl):
        for name in (names,) if isinstance(names, str) else names:
            key = canonical(name)
            if key in _REGISTRY:
                raise RuntimeError(f"scalar function {name!r} is registered twice")
            _REGISTRY[key] = ScalarFunction(key, impl, min_args, max_args, result_type, arrow)
        return impl

    return wrap


def canonical(name: str) -> str:
    return name.lower().replace("_", "")


def lookup(name: str) -> ScalarFunction | None:
    return _REGISTRY.get(canonical(name))


def function_names() -> list[str]:
    """Every registered (canonical) name, sorted."""
    return sorted(_REGISTRY)
