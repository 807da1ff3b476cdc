"""The engine's one exception tree.

``EngineError`` is the root. Each layer raises its own subclass so a caller can tell a bad
config (fix the JSON) from a bad segment (rebuild or re-download it) from a bad input row.
"""

from __future__ import annotations

import logging
import uuid


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""


class ConfigError(EngineError):
    """A schema or table config is invalid. ``field`` is the JSON path of the bad key,
    e.g. ``tableIndexConfig.invertedIndexColumns[1]``."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class SegmentError(EngineError):
    """A segment could not be built, read, packed or unpacked."""


class IngestError(EngineError):
    """An input record could not be read or coerced to the schema.

    ``row`` is the 0-based position of the record in the input (counting every record read,
    before filtering); ``source`` names the input (a file path or "batch").
    """

    def __init__(self, message: str, *, row: int | None = None, source: str | None = None):
        self.row = row
        self.source = source
        where = []
        if source is not None:
            where.append(str(source))
        if row is not None:
            where.append(f"row {row}")
        self.message = message
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


def log_internal_error(log: logging.Logger, what: str, exc: BaseException) -> str:
    """Log an unexpected ``exc`` (a bug) with its traceback under a new id, and return the id:
    an answer to a client names the id, never the exception, whose text may hold file paths,
    hosts or data."""
    error_id = uuid.uuid4().hex[:12]
    log.error("%s failed (error id %s)", what, error_id, exc_info=exc)
    return error_id
