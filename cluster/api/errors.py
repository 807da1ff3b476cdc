"""Every error as Pinot's controller error JSON: ``{"code": <status>, "error": <message>}``
(plus ``field`` when one JSON field is at fault)."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from controller.errors import ControllerError
from engine.clusterstate import (
    ConcurrentUpdateError,
    ZnodeTooLargeError,
    ZooKeeperUnavailableError,
)
from engine.common.errors import ConfigError, log_internal_error
from engine.common.names import InvalidNameError

log = logging.getLogger(__name__)


def error_response(code: int, message: str, field: str | None = None) -> Response:
    body = {"code": code, "error": message}
    if field:
        body["field"] = field
    return Response(body, status=code)


def _flatten(detail, prefix: str = "") -> list[str]:
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                name = prefix
            out += _flatten(value, name)
        return out
    if isinstance(detail, list):
        return [m for item in detail for m in _flatten(item, prefix)]
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def pinot_exception_handler(exc, context):
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        # Pinot's 401, without WWW-Authenticate (no browser password dialog over the console)
        return error_response(status.HTTP_401_UNAUTHORIZED, "HTTP 401 Unauthorized")
    if isinstance(exc, ZooKeeperUnavailableError):
        return error_response(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"ZooKeeper is unavailable, nothing was changed: {exc}",
        )
    if isinstance(exc, ZnodeTooLargeError):
        return error_response(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            f"Nothing was changed: {exc} (SPRIG_ZK_MAX_ZNODE_BYTES; ZooKeeper's jute.maxbuffer "
            "bounds it)",
        )
    if isinstance(exc, InvalidNameError):
        return error_response(400, str(exc))
    if isinstance(exc, ControllerError):
        return error_response(exc.status, exc.message, getattr(exc, "field", None))
    if isinstance(exc, ConfigError):
        return error_response(400, f"Invalid config at '{exc.field}': {exc.message}", exc.field)
    if isinstance(exc, ConcurrentUpdateError):
        return error_response(409, str(exc))
    if isinstance(exc, exceptions.ValidationError):
        messages = _flatten(exc.detail)
        field = None
        if isinstance(exc.detail, dict) and len(exc.detail) == 1:
            field = next(iter(exc.detail))
        return error_response(400, "; ".join(messages), field)
    response = exception_handler(exc, context)
    if response is not None:
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        response.data = {"code": response.status_code, "error": str(detail or response.data)}
        return response
    return None


# --- errors raised outside DRF's views: unknown paths, Django's own 405s, crashes ----------
# Pages (the console and its static files) keep Django's HTML errors; everything else is the
# REST API, which answers in JSON whatever the settings, as Pinot's controller does.
_PAGE_PREFIXES = ("/console", "/static/")
_REASONS = {404: "HTTP 404 Not Found", 405: "HTTP 405 Method Not Allowed"}


def is_api_path(path: str) -> bool:
    return path != "/" and not path.startswith(_PAGE_PREFIXES)


def _json_error(code: int, message: str) -> JsonResponse:
    return JsonResponse({"code": code, "error": message}, status=code)


class ApiJsonErrorsMiddleware:
    """Turns every non-JSON 404, 405 and 500 on an API path into Pinot's error JSON. It wraps
    Django's own handling, so it also covers DEBUG's technical pages, which must never reach
    an API client (they show settings and stack traces)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request.path) or response.status_code not in (404, 405, 500):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        code = response.status_code
        if code == 500:
            return _server_error(request)
        return _json_error(code, f"{_REASONS[code]}: {request.method} {request.path}")

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        # Kept for the 500 body; Django still logs it and builds its response.
        request._sprig_exception = exception
        return None


def _server_error(request: HttpRequest) -> JsonResponse:
    # The client gets an id to quote; the exception, whose text may name files, hosts or
    # settings, stays in the log with its stack trace under that id.
    crash = getattr(request, "_sprig_exception", None)
    what = f"{request.method} {request.path}"
    detail = ""
    if crash is not None:
        detail = f" (error id {log_internal_error(log, what, crash)} in the controller's log)"
    return _json_error(500, f"Internal error while serving {what}{detail}")


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api_path(request.path):
        return _json_error(404, f"{_REASONS[404]}: {request.method} {request.path}")
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if is_api_path(request.path):
        return _server_error(request)
    return defaults.server_error(request)
