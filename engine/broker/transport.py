"""Keep-alive HTTP/1.1 connections from the broker to its servers, one per (thread, server).

A query's requests are all written first and the answers read afterwards, so the servers
work in parallel while the broker's request thread needs no helper threads. The peers are
always Sprig servers (``engine.runtime.http``), which answer with a Content-Length body, so a
minimal client suffices: it costs a fraction of http.client, which parses every response's
headers with the email package. A kept-alive connection the server has closed meanwhile (it
restarted, say) is retried once on a fresh connection; a timeout never is.
"""

from __future__ import annotations

import dataclasses
import socket
import threading


class TransportError(OSError):
    """The server could not be reached or sent something that is not an HTTP answer."""


class StaleConnection(TransportError):
    """The server closed a kept-alive connection (worth one retry on a fresh one)."""


_MAX_LINE = 65536


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=min(timeout_s, 2.0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")
        self.host = host

    def write(self, path: str, body: bytes, timeout_s: float) -> None:
        self.sock.settimeout(timeout_s)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        self.sock.sendall(head + body)

    def read(self, timeout_s: float) -> tuple[int, bytes, bool]:
        """(status, body, keep alive)."""
        self.sock.settimeout(max(timeout_s, 0.001))
        line = self.rfile.readline(_MAX_LINE)
        if not line:
            raise StaleConnection("the server closed the connection")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise TransportError(f"not an HTTP answer: {line[:80]!r}")
        status = int(parts[1])
        length, keep_alive = None, True
        while True:
            header = self.rfile.readline(_MAX_LINE)
            if header in (b"\r\n", b"\n"):
                break
            if not header:
                raise TransportError("the answer ended inside its headers")
            name, _, value = header.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                keep_alive = False
        if length is None:
            raise TransportError("the answer has no Content-Length")
        body = self.rfile.read(length)
        if len(body) < length:
            raise TransportError("the answer was cut short")
        return status, body, keep_alive

    def close(self) -> None:
        try:
            self.rfile.close()
            self.sock.close()
        except OSError:
            pass


@dataclasses.dataclass
class Exchange:
    """One request in flight on one connection."""

    key: tuple[str, int]
    conn: _Connection | None
    reused: bool
    path: str
    body: bytes
    error: OSError | None = None


class ServerConnections:
    """Idle connections per (thread, server); a query that sends two requests to the same
    server (a hybrid table's two halves) uses two connections."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _idle(self) -> dict[tuple[str, int], list[_Connection]]:
        idle = getattr(self._local, "idle", None)
        if idle is None:
            idle = self._local.idle = {}
        return idle

    def send(self, host: str, port: int, path: str, body: bytes, timeout_s: float) -> Exchange:
        """Write ``POST path``; a failure is kept in the exchange and raised by ``receive``."""
        key = (host, port)
        idle = self._idle().get(key)
        conn = idle.pop() if idle else None
        exchange = Exchange(key, conn, conn is not None, path, body)
        try:
            if exchange.conn is None:
                exchange.conn = _Connection(host, port, timeout_s)
            exchange.conn.write(path, body, timeout_s)
        except OSError as exc:
            exchange.error = exc
        return exchange

    def receive(self, exchange: Exchange, timeout_s: float) -> tuple[int, bytes]:
        """(status, body) of the answer; raises OSError (TimeoutError when ``timeout_s``
        seconds pass without an answer)."""
        try:
            if exchange.error is not None:
                raise exchange.error
            return self._finish(exchange, exchange.conn.read(timeout_s))
        except (StaleConnection, ConnectionResetError, BrokenPipeError):
            self.abandon(exchange)
            if not exchange.reused:
                raise
        except (OSError, ValueError) as exc:
            self.abandon(exchange)
            if isinstance(exc, ValueError):
                raise TransportError(f"malformed answer: {exc}") from exc
            raise
        # the server closed the kept-alive connection before our request: once more, fresh
        exchange.reused = False
        try:
            exchange.conn = _Connection(*exchange.key, timeout_s)
            exchange.conn.write(exchange.path, exchange.body, timeout_s)
            return self._finish(exchange, exchange.conn.read(timeout_s))
        except (OSError, ValueError) as exc:
            self.abandon(exchange)
            if isinstance(exc, ValueError):
                raise TransportError(f"malformed answer: {exc}") from exc
            raise

    def post(
        self, host: str, port: int, path: str, body: bytes, timeout_s: float
    ) -> tuple[int, bytes]:
        return self.receive(self.send(host, port, path, body, timeout_s), timeout_s)

    def abandon(self, exchange: Exchange) -> None:
        """Close the exchange's connection without reading its answer."""
        if exchange.conn is not None:
            exchange.conn.close()

    def _finish(self, exchange: Exchange, answer: tuple[int, bytes, bool]) -> tuple[int, bytes]:
        status, body, keep_alive = answer
        if keep_alive:  # idle again for this thread's next query
            self._idle().setdefault(exchange.key, []).append(exchange.conn)
        else:
            exchange.conn.close()
        return status, body
