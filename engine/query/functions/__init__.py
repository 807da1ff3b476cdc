"""The query engine's entry to the scalar functions. The functions themselves, and
``lookup``, are ``engine.functions`` (shared with ingestion transforms); this adds only the
query's own check of a call, which reports Pinot's validation error (code 700)."""

from engine.functions import ScalarFunction, canonical, lookup
from engine.query.errors import QueryValidationError


def check_call(name: str, n_args: int) -> ScalarFunction:
    """The function ``name`` called with ``n_args`` arguments; raises QueryValidationError
    (code 700) for an unknown function or a wrong argument count."""
    fn = lookup(name)
    if fn is None:
        raise QueryValidationError(
            f"Unsupported function: {name.upper()} (no such transform or aggregation function)"
        )
    problem = fn.arity_error(n_args)
    if problem is not None:
        raise QueryValidationError(problem.replace(fn.name.upper(), name.upper(), 1))
    return fn


__all__ = ["ScalarFunction", "canonical", "check_call", "lookup"]
