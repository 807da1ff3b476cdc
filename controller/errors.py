"""The controller's exception tree. Logic functions raise these; the API turns each into
Pinot's error JSON ``{"code": <status>, "error": <message>}`` with the status below."""

from __future__ import annotations


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
