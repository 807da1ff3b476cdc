"""A small HTTP/1.1 service on the standard library's ThreadingHTTPServer (a thread per
connection) with httptools parsing the requests, shared by the engine processes (the server's
query and admin ports, the broker).

Keep-alive connections, TCP_NODELAY (headers and body otherwise meet Nagle's algorithm and a
delayed ACK: +40 ms per request) and one thread per connection keep the per-request overhead
to a fraction of a millisecond. The sockets stay blocking with the kernel's own timeouts
(``blocking_with_timeouts``): a Python-side socket timeout polls before every recv and send,
twice the system calls and GIL hand-offs per request. Handlers return a ``Response``; an
exception in a handler is a 500 (its details go to the log, not to the client), never a
dropped connection. ``HttpLimits`` caps connections, the time to read a request and, per
route, its body.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import ssl
import struct
import threading
import time
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from urllib.parse import urlsplit

import httptools

from engine.runtime.errors import ProcessError
from engine.runtime.http_limits import MAX_BODY_BYTES, HttpLimits
from engine.runtime.http_router import Handler, Request, Response, Router, dispatch

__all__ = [
    "IDLE_TIMEOUT_S", "MAX_BODY_BYTES", "MAX_HEADERS", "MAX_LINE", "Handler", "HttpLimits",
    "HttpService", "Request", "Response", "Router", "blocking_with_timeouts", "dispatch",
    "encode_response", "set_socket_timeouts",
]  # fmt: skip

log = logging.getLogger(__name__)

MAX_LINE = 65536
MAX_HEADERS = 100
MAX_HEAD_BYTES = 4 * MAX_LINE  # request line and headers together
RECV_BYTES = 65536
IDLE_TIMEOUT_S = 300.0  # an idle keep-alive connection is closed after this
# "HTTP/1.1 200 OK\r\n" per known status, built once
_STATUS_LINES = {
    s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode("latin-1") for s in HTTPStatus
}


def blocking_with_timeouts(sock: socket.socket, seconds: float) -> None:
    """Make ``sock`` blocking with kernel timeouts of ``seconds`` on its recv and send calls
    (``set_socket_timeouts``). Unlike ``settimeout``, that costs no poll before each call."""
    sock.settimeout(None)
    set_socket_timeouts(sock, seconds, seconds)


def set_socket_timeouts(
    sock: socket.socket, recv_s: float | None = None, send_s: float | None = None
) -> None:
    """SO_RCVTIMEO and SO_SNDTIMEO of a blocking socket (those given). A recv or send that
    waits longer fails with ``BlockingIOError`` (EAGAIN), which callers treat as their
    timeout."""
    if recv_s is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(recv_s))
    if send_s is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(send_s))


def _timeval(seconds: float) -> bytes:
    # a zero timeval means "no timeout": never less than a microsecond
    micros = max(int(seconds * 1_000_000), 1)
    return struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, handler_class, router: Router, name: str,
                 limits: HttpLimits | None = None,
                 tls: ssl.SSLContext | None = None):  # fmt: skip
        self.router = router
        self.tls = tls  # an https listener: each connection's handshake runs in its thread
        self.service_name = name
        self.limits = limits = limits or HttpLimits()
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        super().__init__(address, handler_class)

    def get_request(self):
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            return self._turn_away(request)
        try:
            super().process_request(request, client_address)  # starts its thread
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _turn_away(self, sock: socket.socket) -> None:
        """A connection over the cap: 503 at once, from the accepting thread, never blocking."""
        sock.setblocking(False)
        busy = Response.error(503, f"over {self.limits.max_connections} connections; retry")
        with contextlib.suppress(OSError):  # a full send buffer: it will see the close
            sock.send(encode_response(busy, keep_alive=False))
        self.shutdown_request(sock)


class _Refusal(Exception):
    """Raised from a parser callback: answer ``status`` with ``message`` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _ReadTimeout(Exception):
    """The request being read missed its deadline."""


class _Handler(socketserver.BaseRequestHandler):
    """One connection: httptools (llhttp, the parser uvicorn uses) splits the bytes into
    requests, this class checks the limits and answers each in turn. Measured against a
    hand-written parser and h11 by ``bench/http.py``. Chunked request bodies are refused with
    411 (the peers are Sprig's own processes and HTTP clients, which send Content-Length)."""

    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        if self.server.tls is not None:
            sock = self._handshake(sock)
            if sock is None:
                return
        # waiting for the first request counts as reading it: the read deadline starts now
        read_s = self.server.limits.read_timeout_s
        self._timeout(sock, read_s)
        self._deadline: float | None = time.monotonic() + read_s  # None: idle between requests
        self._reading = False  # between a request's first byte and its last
        parser = httptools.HttpRequestParser(self)
        self._parser = parser
        self._ready: list[tuple[str, str, dict, bytes, bool]] = []
        self._begin()
        # bytes received while a request head is incomplete: llhttp buffers a header until
        # its end, so a head that never ends must be cut off here
        self._head_bytes, self._headers_done = 0, False
        try:
            self._serve(sock, parser)
        except _ReadTimeout:
            self._refuse(408, f"the request was not received within {read_s:g} s")
        except (TimeoutError, BlockingIOError):  # a recv timed out
            if self._reading:
                self._refuse(408, f"the request was not received within {read_s:g} s")
        except ConnectionError:  # the client went away
            return

    def _serve(self, sock: socket.socket, parser) -> None:
        while True:
            data = sock.recv(RECV_BYTES)
            if not data:
                return
            if not self._headers_done:
                self._head_bytes += len(data)
            try:
                parser.feed_data(data)
            except httptools.HttpParserCallbackError as exc:
                refusal = exc.__context__
                if isinstance(refusal, OSError):  # the client went away mid-request
                    return
                if not isinstance(refusal, _Refusal):
                    raise
                self._answer_ready()
                return self._refuse(refusal.status, refusal.message)
            except httptools.HttpParserUpgrade:
                # no protocol switch here: a complete request is answered as plain
                # HTTP/1.1 (the Upgrade header ignored), then the connection closes
                if not self._ready:
                    return self._refuse(400, "protocol upgrades are not supported")
                self._ready = [(*request[:4], False) for request in self._ready]
                self._answer_ready()
                return
            except httptools.HttpParserError as exc:
                self._answer_ready()
                return self._refuse(400, f"malformed request: {exc}")
            if not self._answer_ready():
                return
            if not self._headers_done and self._head_bytes > MAX_HEAD_BYTES:
                return self._refuse(431, f"request head over {MAX_HEAD_BYTES} bytes")
            if self._reading or self._deadline is not None:
                self._set_recv_timeout(sock)

    def _set_recv_timeout(self, sock: socket.socket) -> None:
        """Off the hot path (a request that came whole, on a kept-alive connection, never
        gets here): a request still being read waits only until its deadline; once none is,
        the connection waits IDLE_TIMEOUT_S for the next."""
        if not self._reading:
            self._deadline = None
            self._timeout(sock, IDLE_TIMEOUT_S)
            return
        now = time.monotonic()
        if self._deadline is None:  # it began in this recv
            self._deadline = now + self.server.limits.read_timeout_s
        if now >= self._deadline:
            raise _ReadTimeout
        self._timeout(sock, self._deadline - now)

    def _timeout(self, sock: socket.socket, seconds: float) -> None:
        """The wait allowed for the next recv. A plain socket takes kernel timeouts (no poll
        per call, the fast path); a TLS one Python's own: OpenSSL would retry a kernel timeout
        (EAGAIN) forever on a blocking socket."""
        if self.server.tls is None:
            blocking_with_timeouts(sock, seconds)
        else:
            sock.settimeout(seconds)

    def _handshake(self, sock: socket.socket):
        """The TLS socket once the handshake is done within the read deadline, or None (a
        plain HTTP client, a certificate refused, a peer that went away)."""
        sock.settimeout(self.server.limits.read_timeout_s)
        try:
            tls = self.server.tls.wrap_socket(sock, server_side=True)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            log.debug("TLS handshake with %s failed: %s", self.client_address, exc)
            return None
        self.request = tls
        return tls

    def finish(self) -> None:
        # a wrapped socket took over the connection: socketserver closes only the original
        if isinstance(self.request, ssl.SSLSocket):
            self.request.close()

    def _answer_ready(self) -> bool:
        """Answer the requests parsed so far, in order; False when the connection must close."""
        ready, self._ready = self._ready, []
        for method, target, headers, body, keep_alive in ready:
            self._send(dispatch(self.server.router, method, target, headers, body), keep_alive)
            if not keep_alive:
                return False
        return True

    # --- httptools callbacks (they run inside feed_data) -----------------------------------
    def _begin(self) -> None:
        self._url: list[bytes] = []
        self._url_bytes = 0
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._keep_alive = True

    def on_message_begin(self) -> None:
        self._reading = True
        self._begin()

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > MAX_LINE:
            raise _Refusal(414, "request line too long")
        self._url.append(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) + len(value) > MAX_LINE:
            raise _Refusal(431, "header line too long")
        if len(self._headers) >= MAX_HEADERS:
            raise _Refusal(431, f"more than {MAX_HEADERS} headers")
        self._headers[name.decode("latin-1").strip().lower()] = value.decode("latin-1").strip()

    def on_headers_complete(self) -> None:
        self._headers_done, self._head_bytes = True, 0
        headers = self._headers
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise _Refusal(411, "chunked request bodies are not supported; send Content-Length")
        # llhttp has already refused a Content-Length that is not a number
        length = int(headers.get("content-length") or 0)
        if length > self.server.router.smallest_body_cap:
            cap = self._body_cap()
            if length > cap:
                raise _Refusal(413, f"request body over {cap} bytes, this endpoint's limit")
        if length and headers.get("expect", "").lower() == "100-continue":
            self.request.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._keep_alive = self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def _body_cap(self) -> int:
        target = b"".join(self._url).decode("latin-1")
        path = target.partition("?")[0] if target[:1] == "/" else urlsplit(target).path
        method = self._parser.get_method().decode("latin-1").upper()
        return self.server.router.body_cap(method, path)

    def on_message_complete(self) -> None:
        self._headers_done = self._reading = False  # the next request's head starts
        self._ready.append((
            self._parser.get_method().decode("latin-1").upper(),
            b"".join(self._url).decode("latin-1"),
            self._headers,
            b"".join(self._body),
            self._keep_alive,
        ))  # fmt: skip

    def _refuse(self, status: int, message: str) -> None:
        self._send(Response.error(status, message), keep_alive=False)

    def _send(self, response: Response, keep_alive: bool = True) -> None:
        # one write: headers and body leave in the same segment when they fit
        self.request.sendall(encode_response(response, keep_alive))


def encode_response(response: Response, keep_alive: bool) -> bytes:
    """Status line, headers and body, as sent."""
    status_line = _STATUS_LINES.get(response.status)
    if status_line is None:
        status_line = f"HTTP/1.1 {response.status} \r\n".encode("latin-1")
    head = (
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        + ("" if keep_alive else "Connection: close\r\n")
        + "\r\n"
    ).encode("latin-1")
    return b"".join((status_line, head, response.body))


class HttpService:
    """One listening port served by a background thread."""

    def __init__(self, name: str, host: str, port: int, router: Router,
                 limits: HttpLimits | None = None,
                 tls: ssl.SSLContext | None = None) -> None:  # fmt: skip
        self.name = name
        try:
            self._server = _Server((host, port), _Handler, router, name, limits, tls)
        except OSError as exc:
            raise ProcessError(
                f"cannot listen on {host}:{port} for the {name} endpoint: {exc.strerror or exc}"
            ) from exc
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
            name=f"http-{self.name}", daemon=True,
        )  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
