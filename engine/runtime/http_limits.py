"""What one listening port of an engine process allows a client: how many connections at
once, how long reading one request may take, and how large a body each route takes.

A thread serves each connection, so the connection cap bounds the threads too; a
connection over the cap is answered 503 without a thread. The read deadline runs from a
request's first byte (from the accept, for a connection's first request) to its last, so a
client that trickles a head or a body (slowloris) holds its thread for that long at most,
not for the idle timeout after each byte. Body caps are per route (``Router.add``), checked
against Content-Length before any of the body is read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from engine.common.errors import ConfigError

MAX_CONNECTIONS_ENV = "SPRIG_HTTP_MAX_CONNECTIONS"
READ_TIMEOUT_ENV = "SPRIG_HTTP_READ_TIMEOUT_S"
# a route's body cap unless it sets one: JSON of a request, never a data upload
DEFAULT_ROUTE_BODY_BYTES = 1 << 20
MAX_BODY_BYTES = 64 << 20  # the most any route may take


@dataclasses.dataclass(frozen=True)
class HttpLimits:
    max_connections: int = 512
    read_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ConfigError(MAX_CONNECTIONS_ENV, "must be at least 1")
        if not 0 < self.read_timeout_s <= 3600:  # also rejects nan
            raise ConfigError(READ_TIMEOUT_ENV, "must be more than 0 and at most 3600 seconds")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HttpLimits:
        """From ``SPRIG_HTTP_MAX_CONNECTIONS`` and ``SPRIG_HTTP_READ_TIMEOUT_S``; an unset or
        empty variable keeps the default. ConfigError naming the variable otherwise."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for field, name, kind in (
            ("max_connections", MAX_CONNECTIONS_ENV, int),
            ("read_timeout_s", READ_TIMEOUT_ENV, float),
        ):
            raw = (env.get(name) or "").strip()
            if raw:
                try:
                    values[field] = kind(raw)
                except ValueError:
                    raise ConfigError(name, f"expected a {kind.__name__}, got {raw!r}") from None
        return cls(**values)
