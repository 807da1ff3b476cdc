"""A small HTTP/1.1 service on the standard library's ThreadingHTTPServer, shared by the
server (query and admin ports) and the broker.

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
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 << 20


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):
        log.debug("%s %s", self.server.service_name, format % args)

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        method = self.command.upper()
        handler, params, exists = self.server.router.resolve(method, parts.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send(Response.error(413, f"request body over {MAX_BODY_BYTES} bytes"))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if handler is None:
            if exists:
                response = Response.error(405, f"{method} is not allowed on {parts.path}")
            else:
                response = Response.error(404, f"no such path: {parts.path}")
            self._send(response)
            return
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        request = Request(method, parts.path, query, body, dict(self.headers.items()), params)
        try:
            response = handler(request)
        except Exception as exc:  # a handler bug is a 500 for this request only
            log.exception("%s %s failed", method, parts.path)
            response = Response.error(500, f"{type(exc).__name__}: {exc}")
        self._send(response)

    def _send(self, response: Response) -> None:
        head = (
            f"HTTP/1.1 {response.status} {self.responses.get(response.status, ('',))[0]}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\n"
            "\r\n"
        ).encode("latin-1")
        # one write: headers and body leave in the same segment when they fit
        self.wfile.write(head + response.body)

    do_GET = do_POST = do_PUT = do_DELETE = _dispatch


class HttpService:
    """One listening port served by a background thread."""

    def __init__(self, name: str, host: str, port: int, router: Router) -> None:
        self.name = name
        self._server = _Server((host, port), _Handler, router, name)
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
