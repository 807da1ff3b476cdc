"""Every error as Pinot's controller error JSON: ``{"code": <status>, "error": <message>}``
(plus ``field`` when one JSON field is at fault)."""

from __future__ import annotations

import logging

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from cluster.errors import ControllerError
from engine.clusterstate import ConcurrentUpdateError, ZooKeeperUnavailableError
from engine.common.errors import ConfigError

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
    if isinstance(exc, ZooKeeperUnavailableError):
        return error_response(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"ZooKeeper is unavailable, nothing was changed: {exc}",
        )
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
