"""The small HTTP/1.1 service the server and broker share (real sockets, no mocks)."""

from __future__ import annotations

import http.client
import socket

import pytest

from engine.runtime.http import HttpService, Request, Response, Router


@pytest.fixture
def service():
    router = Router()
    router.add("GET", "/items/{name}", lambda r: Response.json({"name": r.params["name"],
                                                                "q": r.query}))  # fmt: skip
    router.add("POST", "/echo", lambda r: Response(200, r.body, "application/octet-stream"))
    router.add("GET", "/boom", lambda r: 1 / 0)
    running = HttpService("test", "127.0.0.1", 0, router)
    running.start()
    yield running
    running.stop()


def raw(service, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_keep_alive_routes_params_and_bodies(service):
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=5)
    conn.request("GET", "/items/a%20b?x=1&x=2&y=")
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == b'{"name":"a b","q":{"x":"2","y":""}}'
    sock = conn.sock
    conn.request("POST", "/echo", b"\x00payload")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"\x00payload")
    assert conn.sock is sock  # the same connection served both
    conn.request("POST", "/items/a")
    wrong_method = conn.getresponse()
    assert wrong_method.status == 405 and b"not allowed" in wrong_method.read()
    conn.request("GET", "/nothing")
    assert conn.getresponse().status == 404
    conn.close()


def test_handler_errors_are_500_and_the_service_goes_on(service):
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=5)
    conn.request("GET", "/boom")
    response = conn.getresponse()
    body = response.read()
    # an id to find the traceback in the log; never the exception, which may name files
    assert response.status == 500 and b"error id" in body and b"ZeroDivision" not in body
    conn.request("GET", "/items/x")
    assert conn.getresponse().status == 200


def test_malformed_requests_are_refused_and_closed(service):
    assert raw(service, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw(service, b"GET /items/x HTTP/1.1\r\nbad header\r\n\r\n").startswith(b"HTTP/1.1 400")
    chunked = b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    assert raw(service, chunked).startswith(b"HTTP/1.1 411")
    assert raw(service, b"GET /" + b"x" * 70000 + b" HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 414")
    bad_length = b"POST /echo HTTP/1.1\r\nContent-Length: many\r\n\r\n"
    assert raw(service, bad_length).startswith(b"HTTP/1.1 400")


def test_connection_close_and_expect_continue(service):
    reply = raw(service, b"GET /items/z HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200") and b"Connection: close" in reply
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"hi")
        assert sock.recv(1000).endswith(b"\r\n\r\nhi")


def test_request_dataclass_carries_lowercase_headers(service):
    seen: list[Request] = []
    router = Router()
    router.add("GET", "/h", lambda r: seen.append(r) or Response.text("ok"))
    other = HttpService("h", "127.0.0.1", 0, router)
    other.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", other.port, timeout=5)
        conn.request("GET", "/h", headers={"X-Correlation-Id": "abc"})
        assert conn.getresponse().read() == b"ok"
    finally:
        other.stop()
    assert seen[0].headers["x-correlation-id"] == "abc"


def test_a_port_in_use_is_a_clear_error(service):
    from engine.runtime.errors import ProcessError

    with pytest.raises(ProcessError, match=f"127.0.0.1:{service.port} for the other endpoint"):
        HttpService("other", "127.0.0.1", service.port, Router())


def test_limits_on_the_head_and_the_body_are_refused_with_their_status(service):
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(101))
    assert raw(service, b"GET /items/x HTTP/1.1\r\n" + many + b"\r\n").startswith(b"HTTP/1.1 431")
    long_header = b"GET /items/x HTTP/1.1\r\nX-Long: " + b"v" * 70000 + b"\r\n\r\n"
    assert raw(service, long_header).startswith(b"HTTP/1.1 431")
    endless = b"GET /items/x HTTP/1.1\r\n" + b"X-A: b\r\n" * 40000  # never ends, over 256 KiB
    assert raw(service, endless).startswith(b"HTTP/1.1 431")
    huge = b"POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (65 << 20)
    reply = raw(service, huge)
    assert reply.startswith(b"HTTP/1.1 413") and b"Connection: close" in reply
    # an Upgrade is not followed: the request is answered as HTTP/1.1 and the connection closes
    upgrade = b"GET /items/x HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
    reply = raw(service, upgrade)
    assert reply.startswith(b"HTTP/1.1 200") and b"Connection: close" in reply
    assert reply.endswith(b'{"name":"x","q":{}}')
    assert raw(service, b"CONNECT a:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")


def test_pipelined_requests_are_answered_in_order(service):
    pipelined = (
        b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\none"
        b"GET /items/two HTTP/1.1\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nthree"
    )
    reply = raw(service, pipelined)
    assert reply.count(b"HTTP/1.1 200 OK") == 3
    assert reply.index(b"one") < reply.index(b'"two"') < reply.index(b"three")
    assert reply.endswith(b"three")


def test_each_route_has_its_own_body_cap():
    router = Router()
    router.add("POST", "/small", lambda r: Response(200, r.body, "text/plain"), max_body_bytes=10)
    router.add("POST", "/echo", lambda r: Response(200, b"%d" % len(r.body), "text/plain"))
    service = HttpService("caps", "127.0.0.1", 0, router)
    service.start()
    try:
        fits = raw(service, b"POST /small HTTP/1.1\r\nContent-Length: 10\r\nConnection: close"
                            b"\r\n\r\n0123456789")  # fmt: skip
        assert fits.startswith(b"HTTP/1.1 200") and fits.endswith(b"0123456789")
        over = raw(service, b"POST /small?x=1 HTTP/1.1\r\nContent-Length: 11\r\n\r\n")
        assert over.startswith(b"HTTP/1.1 413") and b"over 10 bytes" in over
        # other routes keep the default (1 MiB), told before the body is sent
        default = raw(service, b"POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (2 << 20))
        assert default.startswith(b"HTTP/1.1 413")
    finally:
        service.stop()
