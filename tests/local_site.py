"""A real HTTP server on 127.0.0.1 for tests that need something to answer (a webhook, a
server's admin port, a segment host) or to show that nothing was asked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Asked:
    method: str
    host: str  # the Host header
    path: str
    body: bytes
    authorization: str | None = None  # the Authorization header


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class LocalSite:
    """Answers every request with ``answer(Asked)`` and keeps each in ``asked``; a context
    manager that stops it on leaving."""

    def __init__(self, answer: Callable[[Asked], Answer]):
        self.asked: list[Asked] = []
        asked = self.asked

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = Asked(self.command, self.headers.get("Host", ""), self.path,
                                self.rfile.read(length),
                                self.headers.get("Authorization"))  # fmt: skip
                asked.append(request)
                reply = answer(request)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_HEAD = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def paths(self) -> list[str]:
        return [request.path for request in self.asked]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LocalSite:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
