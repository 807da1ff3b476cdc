"""Exhaustion (issue 28, item 6): a znode-sized write cap, a segment bomb, held-open partial
requests and oversized bodies against real processes."""

from __future__ import annotations

import io
import socket
import time

import pytest
import requests

from tests.cluster_e2e.security.conftest import (
    MAX_CONNECTIONS,
    MAX_UNPACKED,
    READ_TIMEOUT_S,
    segment_tar,
)

pytestmark = pytest.mark.integration


def test_a_50mb_multipart_schema_is_413_and_the_zookeeper_session_survives(target):
    big = b'{"schemaName": "huge", "dimensionFieldSpecs": [{"name": "c", "dataType": "STRING"}],'
    big += b'"description": "' + b"x" * (50 << 20) + b'"}'
    response = target.post("/schemas", files={"file": ("huge.json", io.BytesIO(big))})
    assert response.status_code == 413, response.text[:300]
    assert "SPRIG_ZK_MAX_ZNODE_BYTES" in response.json()["error"]
    assert requests.get(f"{target.ctl}/schemas/huge", timeout=10).status_code == 404
    # the same ZooKeeper session goes on serving writes: no reconnect, no lost session
    small = {"schemaName": "after", "dimensionFieldSpecs": [{"name": "c", "dataType": "STRING"}]}
    assert target.post("/schemas", json=small).status_code == 200
    log = target.cluster.controller_process.log_path.read_text()
    assert "session lost" not in log and "suspended" not in log
    target.assert_healthy()


def test_a_segment_that_unpacks_past_the_cap_is_refused_before_extracting(target, tmp_path):
    target.ensure_table()
    bomb = segment_tar(tmp_path, "victims_bomb_0", extra={"zeros.bin": MAX_UNPACKED + 1})
    assert bomb.stat().st_size < MAX_UNPACKED // 100  # a small archive...
    response = target.upload(bomb)  # ...that would unpack past the cap
    assert response.status_code == 413, response.text
    assert "SPRIG_SEGMENT_MAX_UNPACKED_BYTES" in response.json()["error"]
    assert "/" not in response.json()["error"].split("unpacks")[0]  # no directory named
    segments = requests.get(f"{target.ctl}/segments/victims", timeout=10).json()
    assert "victims_bomb_0" not in str(segments)
    target.assert_healthy()


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("Threads:")).split()[1])


def _threads_settle(pid: int, at_most: int, within_s: float = 10.0) -> int:
    """The process's thread count once it is at most ``at_most``, or after ``within_s``."""
    deadline = time.monotonic() + within_s
    while (count := _threads(pid)) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def _partial(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /query/sql HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n")  # no end
    return sock


def _answer(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("port_of", ["broker", "server"])
def test_held_open_partial_requests_are_capped_then_timed_out(target, port_of):
    cluster = target.cluster
    if port_of == "broker":
        port, process = cluster.broker_port, cluster.broker
    else:
        ((instance, process),) = cluster.servers.items()
        port = int(instance.rsplit("_", 1)[1])
    before = _threads(process.pid)
    socks = [_partial(port) for _ in range(200)]
    try:
        time.sleep(0.5)
        assert _threads(process.pid) <= before + MAX_CONNECTIONS
        started = time.monotonic()
        answers = [_answer(sock) for sock in socks]
        waited = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
    busy = sum(a.startswith(b"HTTP/1.1 503") for a in answers)
    timed_out = sum(a.startswith(b"HTTP/1.1 408") for a in answers)
    assert busy >= 200 - MAX_CONNECTIONS and busy + timed_out == 200, answers[:3]
    assert waited < READ_TIMEOUT_S + 5  # the deadline counts from the first byte, not per byte
    # a connection's thread ends just after it closes the socket the client saw close: wait
    # for them to go (a leaked thread never would)
    assert _threads_settle(process.pid, before + 2) <= before + 2
    target.assert_healthy()
    rows = requests.post(f"{cluster.broker_url}/query/sql", timeout=30,
                         json={"sql": "SELECT COUNT(*) FROM victims"})  # fmt: skip
    assert rows.status_code == 200


def test_a_slowloris_head_gets_no_more_than_the_read_deadline(target):
    with socket.create_connection(("127.0.0.1", target.cluster.broker_port), timeout=15) as sock:
        started = time.monotonic()
        reply = b""
        try:
            for byte in b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                sock.sendall(bytes([byte]))  # one byte every 0.2 s: each recv is quick
                time.sleep(0.2)
        except OSError:
            pass  # closed under us, as intended
        reply = _answer(sock)
    assert reply.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - started < READ_TIMEOUT_S + 2


@pytest.mark.parametrize("where, path, length", [
    ("broker", "/query/sql", (16 << 20) + 1), ("broker", "/health", (1 << 20) + 1),
    ("server", "/query", (64 << 20) + 1),
])  # fmt: skip
def test_bodies_over_an_endpoints_cap_are_refused_unread(target, where, path, length):
    cluster = target.cluster
    port = (
        cluster.broker_port
        if where == "broker"
        else int(next(iter(cluster.servers)).rsplit("_", 1)[1])
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        method = b"GET" if path == "/health" else b"POST"
        sock.sendall(
            b"%s %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (method, path.encode(), length)
        )
        reply = _answer(sock)
    assert reply.startswith(b"HTTP/1.1 413") and b"Connection: close" in reply
    target.assert_healthy()
