"""Pinot's scalar functions: the one registry that ingestion transforms
(``ingestionConfig.transformConfigs``, ``filterConfig``) and the query engine both call.

``lookup(name)`` finds a function by Pinot's name (case and underscores ignored). This
package sits above ``engine.spi`` and below ``engine.ingest`` and ``engine.query``; it
imports neither of them. Importing it registers every function.
"""

from engine.functions import (  # noqa: F401
    arithmetic,
    bits,
    datetime,
    geo,
    json,
    logical,
    sketch,
    string,
)
from engine.functions.registry import (
    FunctionArgumentError,
    FunctionValueError,
    ScalarFunction,
    canonical,
    function_names,
    lookup,
)

__all__ = [
    "FunctionArgumentError",
    "FunctionValueError",
    "ScalarFunction",
    "canonical",
    "function_names",
    "lookup",
]
