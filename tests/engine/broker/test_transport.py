"""The broker's minimal keep-alive client against the real HTTP service of the servers."""

from __future__ import annotations

import pytest

from engine.broker.transport import ServerConnections
from engine.runtime.http import HttpService, Response, Router
from sprig.stack.process import free_port


def echo_service(port: int = 0) -> HttpService:
    router = Router()
    router.add("POST", "/query", lambda r: Response(200, b"echo:" + r.body, "text/plain"))
    service = HttpService("echo", "127.0.0.1", port, router)
    service.start()
    return service


def test_keep_alive_reuse_parallel_exchanges_and_a_restarted_server():
    service = echo_service()
    port = service.port
    connections = ServerConnections()
    try:
        assert connections.post("127.0.0.1", port, "/query", b"a", 5) == (200, b"echo:a")
        first = connections.send("127.0.0.1", port, "/query", b"b", 5)
        second = connections.send("127.0.0.1", port, "/query", b"c", 5)  # a second connection
        assert first.reused and not second.reused and first.conn is not second.conn
        assert connections.receive(second, 5) == (200, b"echo:c")
        assert connections.receive(first, 5) == (200, b"echo:b")
    finally:
        service.stop()
    # the same port again: the kept-alive connections are stale and retried once, fresh
    service = echo_service(port)
    try:
        assert connections.post("127.0.0.1", port, "/query", b"d", 5) == (200, b"echo:d")
    finally:
        service.stop()


def test_a_refused_connection_is_an_error():
    with pytest.raises(ConnectionRefusedError):
        ServerConnections().post("127.0.0.1", free_port(), "/query", b"x", 2)
