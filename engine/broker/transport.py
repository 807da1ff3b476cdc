"""Keep-alive HTTP/1.1 connections from the broker to its servers, pooled per server.

A query's requests are all written first and the answers read afterwards, so the servers
work in parallel while the broker's request thread needs no helper threads. The peers are
always Sprig servers (``engine.runtime.http``), which answer with a Content-Length body, so a
minimal client suffices: it costs a fraction of http.client, which parses every response's
headers with the email package. A kept-alive connection the server has closed meanwhile (it
restarted, say) is retried once on a fresh connection; a timeout never is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading

from engine.runtime.http import blocking_with_timeouts, set_socket_timeouts


class TransportError(OSError):
    """The server could not be reached or sent something that is not an HTTP answer."""


class StaleConnection(TransportError):
    """The server closed a kept-alive connection (worth one retry on a fresh one)."""


_MAX_HEAD = 65536
_RECV_BYTES = 65536
# A kernel timeout already set is kept while it ends no earlier than the time asked for and
# at most this much later: consecutive queries ask for nearly the same budget (give or take
# the few ms a loaded broker takes to reach the send), and setting it is a system call per
# read and write that holds the GIL (py-spy put 8% of the broker's samples there).
TIMEOUT_SLACK_S = 0.01


class _Connection:
    """One kept-alive connection. The socket stays blocking with kernel timeouts for each
    write and read (``engine.runtime.http.set_socket_timeouts``, up to ``TIMEOUT_SLACK_S``
    late): a Python socket timeout would poll before every send and recv, and
    a buffered reader read the head by lines."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=min(timeout_s, 2.0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        timeout_s += TIMEOUT_SLACK_S / 2
        blocking_with_timeouts(self.sock, timeout_s)
        self._recv_timeout_s = self._send_timeout_s = timeout_s
        self.host = host
        self._buffer = b""  # bytes received past the last answer (none from a Sprig server)

    def write(self, path: str, body: bytes, timeout_s: float) -> None:
        if not timeout_s <= self._send_timeout_s <= timeout_s + TIMEOUT_SLACK_S:
            self._send_timeout_s = timeout_s + TIMEOUT_SLACK_S / 2
            set_socket_timeouts(self.sock, send_s=self._send_timeout_s)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            self.sock.sendall(head + body)
        except BlockingIOError as exc:  # SO_SNDTIMEO ran out
            raise TimeoutError("timed out sending the request") from exc

    def read(self, timeout_s: float) -> tuple[int, bytes, bool]:
        """(status, body, keep alive)."""
        if not timeout_s <= self._recv_timeout_s <= timeout_s + TIMEOUT_SLACK_S:
            self._recv_timeout_s = timeout_s + TIMEOUT_SLACK_S / 2
            set_socket_timeouts(self.sock, recv_s=self._recv_timeout_s)
        data, self._buffer = self._buffer, b""
        end = data.find(b"\r\n\r\n")
        while end < 0:
            if len(data) > _MAX_HEAD:
                raise TransportError(f"the answer's head is over {_MAX_HEAD} bytes")
            chunk = self._recv(_RECV_BYTES)
            if not chunk:
                if not data:
                    raise StaleConnection("the server closed the connection")
                raise TransportError("the answer ended inside its headers")
            data += chunk
            end = data.find(b"\r\n\r\n")
        lines = data[:end].split(b"\r\n")
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise TransportError(f"not an HTTP answer: {lines[0][:80]!r}")
        status = int(parts[1])
        length, keep_alive = None, True
        for header in lines[1:]:
            name, _, value = header.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                keep_alive = False
        if length is None:
            raise TransportError("the answer has no Content-Length")
        start = end + 4
        if len(data) - start >= length:
            self._buffer = data[start + length :]
            return status, data[start : start + length], keep_alive
        body = bytearray(length)  # the rest straight into place, no joining of chunks
        view = memoryview(body)
        got = len(data) - start
        view[:got] = data[start:]
        while got < length:
            n = self._recv_into(view[got:])
            if not n:
                raise TransportError("the answer was cut short")
            got += n
        return status, bytes(body), keep_alive

    def _recv(self, size: int) -> bytes:
        try:
            return self.sock.recv(size)
        except BlockingIOError as exc:  # SO_RCVTIMEO ran out
            raise TimeoutError("timed out waiting for the answer") from exc

    def _recv_into(self, view: memoryview) -> int:
        try:
            return self.sock.recv_into(view)
        except BlockingIOError as exc:
            raise TimeoutError("timed out waiting for the answer") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


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
    """Idle connections per server, shared by the threads: a request takes the one used last
    (LIFO), so a server sees a few warm connections (and threads) instead of one per broker
    thread, and an exchange owns its connection until it is answered. A query that sends two
    requests to the same server (a hybrid table's two halves) uses two connections."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._lock = threading.Lock()

    def send(self, host: str, port: int, path: str, body: bytes, timeout_s: float) -> Exchange:
        """Write ``POST path``; a failure is kept in the exchange and raised by ``receive``."""
        key = (host, port)
        with self._lock:
            idle = self._idle.get(key)
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
        if keep_alive:  # idle again for the next request
            with self._lock:
                self._idle.setdefault(exchange.key, []).append(exchange.conn)
        else:
            exchange.conn.close()
        return status, body
