"""The controller's exception tree. Logic functions raise these; the API turns each into
Pinot's error JSON ``{"code": <status>, "error": <message>}`` with the status below."""

from __future__ import annotations

import logging

from engine.common.errors import log_internal_error


class ControllerError(Exception):
    status = 500

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


class BadRequest(ControllerError):
    status = 400


class Forbidden(ControllerError):
    status = 403


class NotFound(ControllerError):
    status = 404


class Conflict(ControllerError):
    status = 409


class PayloadTooLarge(ControllerError):
    status = 413


class ServiceUnavailable(ControllerError):
    status = 503


def public_error(log: logging.Logger, what: str, exc: BaseException) -> str:
    """What a caller may read of ``exc``, which made ``what`` fail: a ControllerError's own
    message (written for callers); of anything else only that ``what`` failed and the id under
    which ``log`` now keeps the exception and its traceback (its text may name files, hosts
    or settings)."""
    if isinstance(exc, ControllerError):
        return exc.message
    error_id = log_internal_error(log, what, exc)
    return f"{what} failed with an internal error (error id {error_id} in the controller's log)"
