"""Errors of the server process, under the engine's one exception tree."""

from __future__ import annotations

from engine.runtime.errors import ProcessError


class ServerError(ProcessError):
    """Something the server process could not do."""


class SegmentLoadError(ServerError):
    """A segment could not be downloaded, unpacked or loaded; the message says why and is
    shown as the segment's ERROR reason on the admin API."""


class BadQueryRequest(ServerError):
    """A query request from a broker is malformed (not JSON, a field missing or mistyped)."""
