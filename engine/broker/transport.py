"""Keep-alive HTTP/1.1 connections from the broker to the servers, one per (thread, server).

A query's requests are all written first and the answers read afterwards, so the servers
work in parallel while the broker's request thread needs no helper threads. The standard
library's http.client costs a fraction of a general-purpose client per request, and a
connection owned by one thread needs no pool locking. A kept-alive connection the server
has closed meanwhile (it restarted, say) is retried once on a fresh connection; a timeout
never is.
"""

from __future__ import annotations

import dataclasses
import http.client
import socket
import threading

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
TransportError = (OSError, http.client.HTTPException)


@dataclasses.dataclass
class Exchange:
    """One request in flight on one connection."""

    key: tuple[str, int]
    conn: http.client.HTTPConnection
    reused: bool
    path: str
    body: bytes
    error: BaseException | None = None


class ServerConnections:
    """Idle connections per (thread, server); a query that sends two requests to the same
    server (a hybrid table's two halves) uses two connections."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _idle(self) -> dict[tuple[str, int], list[http.client.HTTPConnection]]:
        idle = getattr(self._local, "idle", None)
        if idle is None:
            idle = self._local.idle = {}
        return idle

    def send(self, host: str, port: int, path: str, body: bytes, timeout_s: float) -> Exchange:
        """Write ``POST path``; a failure is kept in the exchange and raised by ``receive``."""
        key = (host, port)
        idle = self._idle().get(key)
        if idle:
            exchange = Exchange(key, idle.pop(), True, path, body)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
            exchange = Exchange(key, conn, False, path, body)
        try:
            _write(exchange.conn, path, body, timeout_s)
        except TransportError as exc:
            exchange.error = exc
        return exchange

    def receive(self, exchange: Exchange, timeout_s: float) -> tuple[int, bytes]:
        """(status, body) of the answer; raises OSError / http.client.HTTPException
        (TimeoutError when ``timeout_s`` seconds pass without an answer)."""
        try:
            if exchange.error is not None:
                raise exchange.error
            return self._finish(exchange, _read(exchange.conn, timeout_s))
        except _STALE:
            exchange.conn.close()
            if not exchange.reused:
                raise
        except TransportError:
            exchange.conn.close()
            raise
        # the server closed the kept-alive connection before our request: once more, fresh
        host, port = exchange.key
        exchange.conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        exchange.reused = False
        try:
            _write(exchange.conn, exchange.path, exchange.body, timeout_s)
            return self._finish(exchange, _read(exchange.conn, timeout_s))
        except TransportError:
            exchange.conn.close()
            raise

    def post(
        self, host: str, port: int, path: str, body: bytes, timeout_s: float
    ) -> tuple[int, bytes]:
        return self.receive(self.send(host, port, path, body, timeout_s), timeout_s)

    def abandon(self, exchange: Exchange) -> None:
        """Close the exchange's connection without reading its answer."""
        exchange.conn.close()

    def _finish(self, exchange: Exchange, answer: tuple[int, bytes]) -> tuple[int, bytes]:
        if exchange.conn.sock is not None:  # kept alive: idle again for the next query
            self._idle().setdefault(exchange.key, []).append(exchange.conn)
        return answer


def _write(conn: http.client.HTTPConnection, path: str, body: bytes, timeout_s: float) -> None:
    if conn.sock is None:
        conn.timeout = min(timeout_s, 2.0)  # connecting must fail fast
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sock.settimeout(timeout_s)
    conn.request("POST", path, body, {"Content-Type": "application/json"})


def _read(conn: http.client.HTTPConnection, timeout_s: float) -> tuple[int, bytes]:
    conn.sock.settimeout(max(timeout_s, 0.001))
    response = conn.getresponse()
    data = response.read()
    if response.will_close:
        conn.close()
    return response.status, data
