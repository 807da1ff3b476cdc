"""HTTP per-request cost on loopback: Sprig's own HTTP/1.1 service and client against the
well-kept libraries that could replace them, measured in the same run.

    python -m bench.http [--requests 5000] [--rounds 5]

Servers (each answers with our client over one kept-alive connection):
  * ours      ``engine.runtime.http.HttpService``
  * h11       the same threaded server and router, with h11 parsing and framing
  * httptools the same threaded server and router, with httptools (llhttp) parsing
Clients (each against our server, one kept-alive connection):
  * ours      ``engine.broker.transport.ServerConnections``
  * urllib3   ``urllib3.HTTPConnectionPool`` (what ``requests`` uses underneath)

Each request is what a broker sends a server: ``POST /query`` with a ~300 byte JSON body,
answered with 2 KiB (the size of a small Arrow IPC result). Every variant sends the same
bounded number of requests per round; rounds interleave the variants so a noisy moment
hits all of them, and the median round is reported, in microseconds per request (client and
server together: both run in this process), with the ratio to ours. Loopback only.
"""

from __future__ import annotations

import argparse
import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Callable
from http import HTTPStatus

import h11
import httptools
import orjson
import urllib3

from engine.broker.transport import ServerConnections
from engine.runtime.http import HttpService, Request, Response, Router, _Server

HOST = "127.0.0.1"
REQUEST_BODY = orjson.dumps({
    "requestId": 7, "sql": "SELECT COUNT(*), SUM(latency_ms) FROM events WHERE country = 'MX' "
    "AND site_id = 7", "tableNameWithType": "events_OFFLINE",
    "segments": [f"events_{i}" for i in range(8)], "queryOptions": {"timeoutMs": "10000"},
    "timeoutMs": 9500,
})  # fmt: skip
ANSWER = bytes(range(256)) * 8  # 2 KiB


def router() -> Router:
    routes = Router()
    routes.add("POST", "/query", lambda request: Response(200, ANSWER, "application/octet-stream"))
    return routes


def _head(response: Response, keep_alive: bool) -> bytes:
    reason = HTTPStatus(response.status).phrase
    return (
        f"HTTP/1.1 {response.status} {reason}\r\nContent-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        + ("" if keep_alive else "Connection: close\r\n")
        + "\r\n"
    ).encode("latin-1")


def _dispatch(server, method: str, target: str, headers: dict, body: bytes) -> Response:
    handler, params, _ = server.router.resolve(method, target.partition("?")[0])
    if handler is None:
        return Response.error(404, f"no such path: {target}")
    return handler(Request(method, target, {}, body, headers, params))


class H11Handler(socketserver.BaseRequestHandler):
    """One connection, parsed and framed by h11."""

    def handle(self) -> None:
        conn = h11.Connection(h11.SERVER)
        sock: socket.socket = self.request
        while True:
            request, body = None, []
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = sock.recv(65536)
                    conn.receive_data(data)
                    if not data and request is None:
                        return
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body.append(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers}
            response = _dispatch(self.server, request.method.decode(),
                                 request.target.decode("latin-1"), headers, b"".join(body))  # fmt: skip
            out = conn.send(h11.Response(status_code=response.status, headers=[
                ("Content-Type", response.content_type),
                ("Content-Length", str(len(response.body))),
            ]))  # fmt: skip
            out += conn.send(h11.Data(data=response.body)) + conn.send(h11.EndOfMessage())
            sock.sendall(out)
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()


class HttptoolsHandler(socketserver.BaseRequestHandler):
    """One connection, parsed by httptools (llhttp); the answer is written as ours is."""

    def handle(self) -> None:
        self.headers: dict[str, str] = {}
        self.url = b""
        self.body: list[bytes] = []
        self.complete = False
        parser = httptools.HttpRequestParser(self)
        sock: socket.socket = self.request
        while True:
            data = sock.recv(65536)
            if not data:
                return
            parser.feed_data(data)
            if not self.complete:
                continue
            self.complete = False
            response = _dispatch(self.server, parser.get_method().decode(),
                                 self.url.decode("latin-1"), self.headers, b"".join(self.body))  # fmt: skip
            keep_alive = parser.should_keep_alive()
            sock.sendall(_head(response, keep_alive) + response.body)
            self.headers, self.url, self.body = {}, b"", []
            if not keep_alive:
                return

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class LibraryService:
    """A threaded server like ours (TCP_NODELAY, a thread per connection) with another
    handler class."""

    def __init__(self, handler_class) -> None:
        self._server = _Server((HOST, 0), handler_class, router(), "bench")
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def ours_client(port: int) -> Callable[[], bytes]:
    connections = ServerConnections()

    def post() -> bytes:
        status, body = connections.post(HOST, port, "/query", REQUEST_BODY, 10.0)
        assert status == 200 and body == ANSWER
        return body

    return post


def urllib3_client(port: int) -> Callable[[], bytes]:
    pool = urllib3.HTTPConnectionPool(HOST, port, maxsize=1, retries=False, timeout=10.0)

    def post() -> bytes:
        response = pool.request("POST", "/query", body=REQUEST_BODY,
                                headers={"Content-Type": "application/json"})  # fmt: skip
        assert response.status == 200 and response.data == ANSWER
        return response.data

    return post


def per_request_us(post: Callable[[], bytes], requests: int) -> float:
    for _ in range(min(200, requests)):  # warm up: connection open, caches, branch predictors
        post()
    started = time.perf_counter()
    for _ in range(requests):
        post()
    return (time.perf_counter() - started) / requests * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests per variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= 1_000_000 or not 1 <= args.rounds <= 100:
        parser.error("--requests must be in 1..1000000 and --rounds in 1..100")

    ours = HttpService("bench", HOST, 0, router())
    h11_service, httptools_service = LibraryService(H11Handler), LibraryService(HttptoolsHandler)
    for service in (ours, h11_service, httptools_service):
        service.start()
    variants = {
        ("server", "ours"): ours_client(ours.port),
        ("server", "h11"): ours_client(h11_service.port),
        ("server", "httptools"): ours_client(httptools_service.port),
        ("client", "ours"): ours_client(ours.port),
        ("client", "urllib3"): urllib3_client(ours.port),
    }
    times: dict[tuple[str, str], list[float]] = {key: [] for key in variants}
    try:
        for _ in range(args.rounds):
            for key, post in variants.items():
                times[key].append(per_request_us(post, args.requests))
    finally:
        for service in (ours, h11_service, httptools_service):
            service.stop()

    print(f"{args.requests} requests x {args.rounds} rounds per variant, loopback, one kept-alive "
          f"connection; POST {len(REQUEST_BODY)} B, answer {len(ANSWER)} B")  # fmt: skip
    print(f"{'side':<8}{'implementation':<16}{'median us/req':>14}{'min':>9}{'max':>9}"
          f"{'vs ours':>9}")  # fmt: skip
    for side in ("server", "client"):
        base = statistics.median(times[(side, "ours")])
        for (s, name), values in times.items():
            if s != side:
                continue
            median = statistics.median(values)
            print(f"{side:<8}{name:<16}{median:>14.1f}{min(values):>9.1f}{max(values):>9.1f}"
                  f"{median / base:>8.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
