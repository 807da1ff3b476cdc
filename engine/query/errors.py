"""Query errors, each carrying the Pinot error code the broker puts in ``exceptions``.

Codes follow Pinot's ``QueryException``: 150 SQL parsing, 190 table missing, 200 query
execution, 250 execution timeout, 700 query validation, 710 unknown column.
"""

from __future__ import annotations

import logging

from engine.common.errors import EngineError, log_internal_error

SQL_PARSING_ERROR_CODE = 150
TABLE_DOES_NOT_EXIST_ERROR_CODE = 190
QUERY_EXECUTION_ERROR_CODE = 200
EXECUTION_TIMEOUT_ERROR_CODE = 250
QUERY_VALIDATION_ERROR_CODE = 700
UNKNOWN_COLUMN_ERROR_CODE = 710


class QueryError(EngineError):
    """Root of query errors; ``error_code`` is the Pinot code reported to the client."""

    error_code = QUERY_EXECUTION_ERROR_CODE

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def to_exception(self) -> dict:
        """The ``exceptions[]`` entry of a BrokerResponse."""
        return {"errorCode": self.error_code, "message": self.message}


class QueryParseError(QueryError):
    """The SQL text could not be parsed; the message names the line and column."""

    error_code = SQL_PARSING_ERROR_CODE


class TableNotFoundError(QueryError):
    error_code = TABLE_DOES_NOT_EXIST_ERROR_CODE


class QueryValidationError(QueryError):
    """The SQL parsed but asks for something that does not exist or cannot be computed
    (unknown function, wrong argument count, aggregation inside WHERE ...)."""

    error_code = QUERY_VALIDATION_ERROR_CODE


class UnknownColumnError(QueryValidationError):
    error_code = UNKNOWN_COLUMN_ERROR_CODE

    def __init__(self, column: str, where: str = "the query"):
        self.column = column
        super().__init__(f"Unknown columnName '{column}' found in {where}")


class QueryExecutionError(QueryError):
    error_code = QUERY_EXECUTION_ERROR_CODE

    @classmethod
    def internal(cls, where: str, exc: BaseException, log: logging.Logger) -> QueryExecutionError:
        """An engine bug met by a query, as its answer: ``where`` it happened and the id of
        the traceback in that process's log."""
        error_id = log_internal_error(log, f"a query on {where}", exc)
        return cls(f"QueryExecutionError on {where}: internal error (error id {error_id})")


class QueryTimeoutError(QueryError):
    error_code = EXECUTION_TIMEOUT_ERROR_CODE
