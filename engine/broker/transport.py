"""Keep-alive HTTP/1.1 connections from the broker to the servers, one per (thread, server).

The standard library's http.client costs a fraction of a general-purpose client per request,
and a connection owned by one thread needs no pool locking. A kept-alive connection the
server has closed meanwhile (it restarted, say) is retried once on a fresh connection; a
timeout never is.
"""

from __future__ import annotations

import http.client
import socket
import threading

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class ServerConnections:
    def __init__(self) -> None:
        self._local = threading.local()

    def _connections(self) -> dict[tuple[str, int], http.client.HTTPConnection]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        return conns

    def post(
        self, host: str, port: int, path: str, body: bytes, timeout_s: float
    ) -> tuple[int, bytes]:
        """(status, body) of ``POST path``; raises OSError / http.client.HTTPException
        (TimeoutError when ``timeout_s`` seconds pass without an answer)."""
        conns = self._connections()
        key = (host, port)
        conn = conns.get(key)
        reused = conn is not None
        if conn is None:
            conn = conns[key] = http.client.HTTPConnection(host, port, timeout=timeout_s)
        try:
            return _exchange(conn, path, body, timeout_s)
        except _STALE:
            conn.close()
            conns.pop(key, None)
            if not reused:
                raise
        except (OSError, http.client.HTTPException):
            conn.close()
            conns.pop(key, None)
            raise
        conn = conns[key] = http.client.HTTPConnection(host, port, timeout=timeout_s)
        try:
            return _exchange(conn, path, body, timeout_s)
        except (OSError, http.client.HTTPException):
            conn.close()
            conns.pop(key, None)
            raise


def _exchange(
    conn: http.client.HTTPConnection, path: str, body: bytes, timeout_s: float
) -> tuple[int, bytes]:
    if conn.sock is None:
        conn.timeout = min(timeout_s, 2.0)  # connecting must fail fast
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sock.settimeout(timeout_s)
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.will_close:
        conn.close()
    return response.status, data
