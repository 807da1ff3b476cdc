"""The multi-stage engine's errors, with Pinot's codes (``QueryErrorCode``)."""

from __future__ import annotations

from engine.query.errors import (
    QueryError,
    QueryExecutionError,
    QueryTimeoutError,
    QueryValidationError,
)

RESOURCE_LIMIT_ERROR_CODE = 245
INTERNAL_ERROR_CODE = 450
CANCELLED_ERROR_CODE = 503
SERVER_NOT_RESPONDING_ERROR_CODE = 427


class ResourceLimitError(QueryError):
    """A join, window or group limit with THROW, or the query's memory budget."""

    error_code = RESOURCE_LIMIT_ERROR_CODE


class InternalPlanError(QueryError):
    """Physical planning failed, e.g. a partition hint that does not match the table."""

    error_code = INTERNAL_ERROR_CODE


class QueryCancelledError(QueryError):
    error_code = CANCELLED_ERROR_CODE


class StageFailure(QueryError):
    """A worker's error as it travels to the broker: the code of the original."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code


def classify(exc: Exception, sql: str = "") -> QueryError:
    """A DataFusion error as Pinot's: planning problems are the query's (700), resource
    exhaustion 245, the rest of execution 200."""
    if isinstance(exc, QueryError):
        return exc
    text = str(exc)
    if "Resources exhausted" in text:
        return ResourceLimitError(f"Query exceeded its memory budget: {_short(text)}")
    if any(marker in text for marker in ("Error during planning", "Schema error",
                                         "SQL error", "type_coercion", "Invalid function")):  # fmt: skip
        return QueryValidationError(f"Error composing query plan: {_short(text)}")
    return QueryExecutionError(f"QueryExecutionError: {_short(text)}")


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) < 1000 else text[:1000] + " ..."


__all__ = [
    "QueryCancelledError",
    "QueryTimeoutError",
    "ResourceLimitError",
    "StageFailure",
    "classify",
]
