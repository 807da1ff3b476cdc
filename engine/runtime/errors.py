"""Errors of an engine process (server, broker, minion membership), under the engine's one
exception tree."""

from __future__ import annotations

from engine.common.errors import EngineError


class ProcessError(EngineError):
    """Something an engine process could not do, such as listen on its port. The server's and
    the broker's own errors derive from it, so a command that starts either catches one type."""
