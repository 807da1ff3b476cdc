"""A small HTTP/1.1 service on the standard library's ThreadingHTTPServer (a thread per
connection), shared by the engine processes (the server's query and admin ports, the broker).

Keep-alive connections, TCP_NODELAY (headers and body otherwise meet Nagle's algorithm and a
delayed ACK: +40 ms per request) and one thread per connection keep the per-request overhead
to a fraction of a millisecond. Handlers return a ``Response``; an exception in a handler is
a 500 with the error's text, never a dropped connection.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
import socketserver
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from engine.runtime.errors import ProcessError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 << 20
MAX_LINE = 65536
MAX_HEADERS = 100
IDLE_TIMEOUT_S = 300.0  # an idle keep-alive connection is closed after this
_STATUSES = {s.value for s in HTTPStatus}


@dataclasses.dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: bytes
    headers: dict[str, str]
    params: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, data: object, status: int = 200) -> Response:
        return cls(status, orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY))

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain") -> Response:
        return cls(status, text.encode(), f"{content_type}; charset=utf-8")

    @classmethod
    def error(cls, status: int, message: str) -> Response:
        return cls.json({"code": status, "error": message}, status)


Handler = Callable[[Request], Response]


class Router:
    """Routes ``METHOD /literal/{param}/...`` patterns to handlers; ``{name}`` matches one
    path segment, ``{name:path}`` the rest of the path."""

    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern, Handler]] = []

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        regex = re.sub(r"\{(\w+):path\}", r"(?P<\1>.+)", pattern)
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex)
        self._routes.append((method.upper(), re.compile(f"^{regex}/?$"), handler))

    def resolve(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], bool]:
        """(handler, path params, whether the path exists for another method)."""
        other = False
        for m, regex, handler in self._routes:
            match = regex.match(path)
            if match:
                if m == method:
                    return handler, {k: unquote(v) for k, v in match.groupdict().items()}, True
                other = True
        return None, {}, other


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, handler_class, router: Router, name: str):
        self.router = router
        self.service_name = name
        super().__init__(address, handler_class)

    def get_request(self):
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr


class _Handler(socketserver.StreamRequestHandler):
    """A minimal HTTP/1.1 request loop: request line, headers into a dict, a Content-Length
    body. (BaseHTTPRequestHandler parses headers with the email package, which costs more
    than the rest of a small query.) Chunked request bodies are refused with 411."""

    server: _Server
    timeout = IDLE_TIMEOUT_S
    wbufsize = 0

    def handle(self) -> None:
        while self._one_request():
            pass

    def _one_request(self) -> bool:
        """Serve one request; False when the connection must close."""
        try:
            line = self.rfile.readline(MAX_LINE + 1)
            if not line:
                return False
            if len(line) > MAX_LINE:
                return self._refuse(414, "request line too long")
            try:
                method, target, version = line.decode("latin-1").split()
            except ValueError:
                return self._refuse(400, "malformed request line")
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADERS):
                raw = self.rfile.readline(MAX_LINE + 1)
                if raw in (b"\r\n", b"\n", b""):
                    break
                if len(raw) > MAX_LINE:
                    return self._refuse(431, "header line too long")
                name, sep, value = raw.decode("latin-1").partition(":")
                if not sep:
                    return self._refuse(400, f"malformed header line {raw[:80]!r}")
                headers[name.strip().lower()] = value.strip()
            else:
                return self._refuse(431, f"more than {MAX_HEADERS} headers")
            connection = headers.get("connection", "").lower()
            keep_alive = (
                connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
            )
            if "chunked" in headers.get("transfer-encoding", "").lower():
                return self._refuse(
                    411, "chunked request bodies are not supported; send Content-Length"
                )
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                return self._refuse(400, "Content-Length is not a number")
            if length < 0 or length > MAX_BODY_BYTES:
                return self._refuse(413, f"request body over {MAX_BODY_BYTES} bytes")
            if length and headers.get("expect", "").lower() == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                return False
            self._send(self._dispatch(method.upper(), target, headers, body), keep_alive)
            return keep_alive
        except (TimeoutError, ConnectionError):
            return False

    def _dispatch(self, method: str, target: str, headers: dict, body: bytes) -> Response:
        parts = urlsplit(target)
        handler, params, exists = self.server.router.resolve(method, parts.path)
        if handler is None:
            if exists:
                return Response.error(405, f"{method} is not allowed on {parts.path}")
            return Response.error(404, f"no such path: {parts.path}")
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        request = Request(method, parts.path, query, body, headers, params)
        try:
            return handler(request)
        except Exception as exc:  # a handler bug is a 500 for this request only
            log.exception("%s %s failed", method, parts.path)
            return Response.error(500, f"{type(exc).__name__}: {exc}")

    def _refuse(self, status: int, message: str) -> bool:
        self._send(Response.error(status, message), keep_alive=False)
        return False

    def _send(self, response: Response, keep_alive: bool = True) -> None:
        reason = HTTPStatus(response.status).phrase if response.status in _STATUSES else ""
        head = (
            f"HTTP/1.1 {response.status} {reason}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\n"
            + ("" if keep_alive else "Connection: close\r\n")
            + "\r\n"
        ).encode("latin-1")
        # one write: headers and body leave in the same segment when they fit
        self.wfile.write(head + response.body)


class HttpService:
    """One listening port served by a background thread."""

    def __init__(self, name: str, host: str, port: int, router: Router) -> None:
        self.name = name
        try:
            self._server = _Server((host, port), _Handler, router, name)
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
