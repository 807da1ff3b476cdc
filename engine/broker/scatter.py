"""Scatter a query to servers concurrently and gather their intermediate results.

All requests are written first, then the answers are read in turn on the same thread.

Every server request carries the remaining time budget; one that fails (refused, reset,
timed out) yields an exception naming the server and marks the server unhealthy, and the
others are still reduced: a partial result, never a hang. Connections are pooled and kept
alive per server (``transport``).
"""

from __future__ import annotations

import dataclasses
import time

import orjson

from engine.broker.errors import SERVER_NOT_RESPONDING_ERROR_CODE
from engine.broker.routes import ServerAddress
from engine.broker.selection import ServerHealth
from engine.broker.transport import Exchange, ServerConnections
from engine.query import IntermediateResult
from engine.query.errors import QueryError
from engine.runtime.outbound import sprig_error


@dataclasses.dataclass
class ServerResponse:
    server: ServerAddress
    result: IntermediateResult | None = None
    exception: dict | None = None
    elapsed_ms: int = 0
    answered: bool = False  # the server sent an answer (a result or its own error)
    explain: list | None = None  # the segment plans, for EXPLAIN PLAN FOR
    size: int = 0  # bytes of the answer (the query log's serverStats)
    deserialize_ms: int = 0

    @property
    def responded(self) -> bool:
        return self.answered


class ScatterGather:
    def __init__(self, health: ServerHealth) -> None:
        self.connections = ServerConnections()
        self.health = health

    def scatter(
        self, requests: list[tuple[ServerAddress, bytes]], deadline: float
    ) -> list[ServerResponse]:
        """One response per request, in order, by ``deadline`` (monotonic seconds) at the
        latest. Every request is written before any answer is read, so the servers work at
        the same time while this thread waits."""
        started = time.monotonic()
        exchanges: list[Exchange | None] = []
        for server, body in requests:
            remaining = deadline - time.monotonic()
            exchanges.append(
                self.connections.send(server.host, server.port, "/query", body, remaining)
                if remaining > 0
                else None
            )
        out = []
        for (server, _), exchange in zip(requests, exchanges, strict=True):
            if exchange is None:
                out.append(_failure(server, "not asked: the query had already timed out"))
            else:
                out.append(self._gather(server, exchange, deadline, started))
        return out

    def ask(self, server: ServerAddress, body: bytes, deadline: float) -> ServerResponse:
        """One request to one server (see ``scatter``)."""
        return self.scatter([(server, body)], deadline)[0]

    def _gather(
        self, server: ServerAddress, exchange: Exchange, deadline: float, started: float
    ) -> ServerResponse:
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.connections.abandon(exchange)  # its answer must not meet the next query
                raise TimeoutError("the query's time ran out before the answer came")
            status, data = self.connections.receive(exchange, remaining)
        except OSError as exc:
            self.health.mark_failed(server.instance_id, server.health_url)
            what = "timed out" if isinstance(exc, TimeoutError) else "failed"
            return _failure(server, f"{what}: {type(exc).__name__}: {exc}", started)
        elapsed = int((time.monotonic() - started) * 1000)
        if status == 200 and data[:1] == b"{":
            try:
                plans = orjson.loads(data)["segmentPlans"]
            except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                return _failure(server, f"sent an unreadable plan: {exc}", started)
            return ServerResponse(server, None, None, elapsed, answered=True, explain=plans)
        if status == 200:
            decoding = time.monotonic()
            try:
                result = IntermediateResult.from_bytes(data)
            except QueryError as exc:
                return _failure(server, f"sent an unreadable result: {exc}", started)
            return ServerResponse(server, result, None, elapsed, answered=True, size=len(data),
                                  deserialize_ms=int((time.monotonic() - decoding) * 1000))  # fmt: skip
        # a Sprig server's error is the query's exception, as in Pinot; of anything else only
        # the status: the reply's text is nobody's business
        code, message = sprig_error(data) or (None, f"answered HTTP {status} without an error")
        error = {"errorCode": 200 if code is None else code,
                 "message": f"{server.instance_id}: {message}"}  # fmt: skip
        return ServerResponse(server, None, error, elapsed, answered=True)


def _failure(server: ServerAddress, what: str, started: float | None = None) -> ServerResponse:
    elapsed = int((time.monotonic() - started) * 1000) if started is not None else 0
    return ServerResponse(
        server,
        None,
        {"errorCode": SERVER_NOT_RESPONDING_ERROR_CODE,
         "message": f"Server {server.instance_id} {what}"},
        elapsed,
    )  # fmt: skip
