"""The broker's client and the HTTP service on blocking sockets with kernel timeouts: answers
split over many reads, bodies larger than one read, a server that never answers, an idle
connection closed by the service, and the router's cached resolutions."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from engine.broker.transport import ServerConnections, TransportError
from engine.runtime import http
from engine.runtime.http import HttpService, Response, Router, dispatch


class ScriptedServer:
    """Accepts one connection at a time, reads one request head and body, then sends
    ``answer`` in ``pieces`` separate writes (or nothing when ``answer`` is None)."""

    def __init__(self, answer: bytes | None, pieces: int = 1) -> None:
        self.answer, self.pieces = answer, pieces
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests += 1
                if self.answer is None:
                    time.sleep(2)
                    continue
                step = max(1, len(self.answer) // self.pieces)
                for i in range(0, len(self.answer), step):
                    conn.sendall(self.answer[i : i + step])
                    time.sleep(0.002)
                time.sleep(0.05)  # the client reads before this connection closes

    def close(self) -> None:
        self.listener.close()


def test_an_answer_in_many_pieces_and_a_large_body_are_read_whole():
    body = bytes(range(256)) * 4096  # 1 MiB: many reads into place
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    server = ScriptedServer(answer + body, pieces=40)  # the head itself split over reads
    try:
        status, got = ServerConnections().post("127.0.0.1", server.port, "/q", b"{}", 5)
        assert status == 200 and got == body
    finally:
        server.close()


def test_a_server_that_never_answers_times_out_in_time():
    server = ScriptedServer(None)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            ServerConnections().post("127.0.0.1", server.port, "/q", b"{}", 0.3)
        assert 0.25 < time.monotonic() - started < 1.5
        assert server.requests == 1  # a timeout is never retried
    finally:
        server.close()


def test_answers_that_are_not_http_or_lack_a_length_are_errors():
    for answer, message in (
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Type: x\r\n\r\n", "no Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "cut short"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n", "ended inside its headers"),
    ):
        server = ScriptedServer(answer)
        try:
            with pytest.raises(TransportError, match=message):
                ServerConnections().post("127.0.0.1", server.port, "/q", b"{}", 2)
        finally:
            server.close()


def test_the_service_closes_an_idle_connection(monkeypatch):
    monkeypatch.setattr(http, "IDLE_TIMEOUT_S", 0.3)
    router = Router()
    router.add("POST", "/query", lambda r: Response(200, b"ok:" + r.body, "text/plain"))
    service = HttpService("idle", "127.0.0.1", 0, router)
    service.start()
    try:
        with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
            sock.sendall(b"POST /query HTTP/1.1\r\nContent-Length: 1\r\n\r\na")
            first = sock.recv(65536)
            assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b"ok:a")
            started = time.monotonic()
            assert sock.recv(65536) == b""  # closed by the service once idle
            assert 0.2 < time.monotonic() - started < 3
    finally:
        service.stop()


def test_cached_route_resolutions_keep_params_apart_and_see_new_routes():
    router = Router()
    router.add("GET", "/tables/{table}", lambda r: Response.json(r.params))
    router.add("GET", "/files/{rest:path}", lambda r: Response.json(r.params))
    for _ in range(2):  # the second round answers from the cache
        assert dispatch(router, "GET", "/tables/a%20b", {}, b"").body == b'{"table":"a b"}'
        assert dispatch(router, "GET", "/files/x/y?z=1", {}, b"").body == b'{"rest":"x/y"}'
        assert dispatch(router, "POST", "/tables/a", {}, b"").status == 405
        assert dispatch(router, "GET", "/nothing", {}, b"").status == 404
    # a handler that changes its params does not change the next request's
    router.add("GET", "/mutate/{x}", lambda r: Response.json(r.params.pop("x")))
    assert dispatch(router, "GET", "/mutate/1", {}, b"").body == b'"1"'
    assert dispatch(router, "GET", "/mutate/1", {}, b"").body == b'"1"'
    # the query string of an absolute-form or plain target is still parsed
    router.add("GET", "/q", lambda r: Response.json(r.query))
    assert dispatch(router, "GET", "/q?a=1&a=2&b=", {}, b"").body == b'{"a":"2","b":""}'
    assert dispatch(router, "GET", "http://h:1/q?c=3", {}, b"").body == b'{"c":"3"}'
    assert dispatch(router, "GET", "/q", {}, b"").body == b"{}"


def test_a_kept_connection_times_out_by_each_request_s_own_budget():
    def answer(request):
        if request.body == b"slow":
            time.sleep(1.5)
        return Response(200, b"ok", "text/plain")

    router = Router()
    router.add("POST", "/query", answer)
    service = HttpService("budget", "127.0.0.1", 0, router)
    service.start()
    connections = ServerConnections()
    try:
        assert connections.post("127.0.0.1", service.port, "/query", b"fast", 30) == (200, b"ok")
        exchange = connections.send("127.0.0.1", service.port, "/query", b"slow", 0.3)
        assert exchange.reused  # the same connection, its long timeout from the first request
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            connections.receive(exchange, 0.3)
        assert 0.25 < time.monotonic() - started < 1.0
    finally:
        service.stop()
