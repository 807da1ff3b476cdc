"""HTTP per-request cost on loopback: Sprig's own HTTP/1.1 service and client against the
well-kept libraries that could replace them, measured in the same run.

    python -m bench.http [--requests 5000] [--rounds 5]

Servers (each answers our client over one kept-alive connection; all share the threaded
server, the router and the answer):
  * ours         ``engine.runtime.http.HttpService``: httptools (llhttp) parsing
  * hand-written the readline parser Sprig had before (the baseline it was chosen against)
  * h11          h11 parsing and framing
Clients (each against our server, one kept-alive connection):
  * ours      ``engine.broker.transport.ServerConnections``
  * urllib3   ``urllib3.HTTPConnectionPool`` (what ``requests`` uses underneath)

Each request is what a broker sends a server: ``POST /query`` with a ~300 byte JSON body,
answered with 2 KiB (the size of a small Arrow IPC result). Every variant sends the same
bounded number of requests per round; rounds interleave the variants so a noisy moment
hits all of them, and the median round is reported, in microseconds per request (client and
server together: both run in this process) of CPU and of wall time, with the ratios to ours.
On a shared machine compare the CPU column: wall time also counts waiting for a core.
Loopback only.
"""

from __future__ import annotations

import argparse
import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Callable

import h11
import orjson
import urllib3

from engine.broker.transport import ServerConnections
from engine.runtime.http import (
    IDLE_TIMEOUT_S,
    MAX_BODY_BYTES,
    MAX_HEADERS,
    MAX_LINE,
    HttpService,
    Response,
    Router,
    _Server,
    dispatch,
    encode_response,
)

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


class HandWrittenHandler(socketserver.StreamRequestHandler):
    """The hand-written request loop Sprig used before httptools (kept here as the baseline
    the choice was measured against): request line and headers by readline, a Content-Length
    body."""

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
                return _refuse(self, 414, "request line too long")
            try:
                method, target, version = line.decode("latin-1").split()
            except ValueError:
                return _refuse(self, 400, "malformed request line")
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADERS):
                raw = self.rfile.readline(MAX_LINE + 1)
                if raw in (b"\r\n", b"\n", b""):
                    break
                if len(raw) > MAX_LINE:
                    return _refuse(self, 431, "header line too long")
                name, sep, value = raw.decode("latin-1").partition(":")
                if not sep:
                    return _refuse(self, 400, f"malformed header line {raw[:80]!r}")
                headers[name.strip().lower()] = value.strip()
            else:
                return _refuse(self, 431, f"more than {MAX_HEADERS} headers")
            connection = headers.get("connection", "").lower()
            keep_alive = (
                connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
            )
            if "chunked" in headers.get("transfer-encoding", "").lower():
                return _refuse(
                    self, 411, "chunked request bodies are not supported; send Content-Length"
                )
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                return _refuse(self, 400, "Content-Length is not a number")
            if length < 0 or length > MAX_BODY_BYTES:
                return _refuse(self, 413, f"request body over {MAX_BODY_BYTES} bytes")
            if length and headers.get("expect", "").lower() == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                return False
            response = dispatch(self.server.router, method.upper(), target, headers, body)
            self.wfile.write(encode_response(response, keep_alive))
            return keep_alive
        except (TimeoutError, ConnectionError):
            return False


def _refuse(handler: HandWrittenHandler, status: int, message: str) -> bool:
    response = Response.error(status, message)
    handler.wfile.write(encode_response(response, keep_alive=False))
    return False


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
            response = dispatch(self.server.router, request.method.decode(),
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


class LibraryService:
    """A threaded server like ours (TCP_NODELAY, a thread per connection) with another
    request handler."""

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


def per_request_us(post: Callable[[], bytes], requests: int) -> tuple[float, float]:
    """(wall, CPU) microseconds per request. CPU is this process's, client and server
    threads together: unlike the wall time it does not grow when other processes take the
    cores, so it is the figure to compare on a shared machine."""
    for _ in range(min(200, requests)):  # warm up: connection open, caches, branch predictors
        post()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(requests):
        post()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall / requests * 1e6, cpu / requests * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests per variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= 1_000_000 or not 1 <= args.rounds <= 100:
        parser.error("--requests must be in 1..1000000 and --rounds in 1..100")

    ours = HttpService("bench", HOST, 0, router())
    hand_written, h11_service = LibraryService(HandWrittenHandler), LibraryService(H11Handler)
    for service in (ours, hand_written, h11_service):
        service.start()
    variants = {
        ("server", "ours"): ours_client(ours.port),
        ("server", "hand-written"): ours_client(hand_written.port),
        ("server", "h11"): ours_client(h11_service.port),
        ("client", "ours"): ours_client(ours.port),
        ("client", "urllib3"): urllib3_client(ours.port),
    }
    wall: dict[tuple[str, str], list[float]] = {key: [] for key in variants}
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in variants}
    try:
        for _ in range(args.rounds):
            for key, post in variants.items():
                round_wall, round_cpu = per_request_us(post, args.requests)
                wall[key].append(round_wall)
                cpu[key].append(round_cpu)
    finally:
        for service in (ours, hand_written, h11_service):
            service.stop()

    print(f"{args.requests} requests x {args.rounds} rounds per variant, loopback, one kept-alive "
          f"connection; POST {len(REQUEST_BODY)} B, answer {len(ANSWER)} B; medians of the "
          "rounds in us per request (client and server together)")  # fmt: skip
    print(f"{'side':<8}{'implementation':<14}{'CPU':>8}{'vs ours':>9}{'wall':>9}{'vs ours':>9}"
          f"{'wall min':>10}")  # fmt: skip
    for side in ("server", "client"):
        cpu_base = statistics.median(cpu[(side, "ours")])
        wall_base = statistics.median(wall[(side, "ours")])
        for key in variants:
            if key[0] != side:
                continue
            c, w = statistics.median(cpu[key]), statistics.median(wall[key])
            print(f"{side:<8}{key[1]:<14}{c:>8.1f}{c / cpu_base:>8.2f}x{w:>9.1f}"
                  f"{w / wall_base:>8.2f}x{min(wall[key]):>10.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
