"""Scalar (transform) functions. Importing this package registers all of them."""

from engine.query.functions import datetime, json, scalar  # noqa: F401  (registration)
from engine.query.functions.registry import ScalarFunction, canonical, check_call, lookup

__all__ = ["ScalarFunction", "canonical", "check_call", "lookup"]
