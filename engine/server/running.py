"""The queries a server is running, by Pinot's query id ``<brokerId>_<requestId>``, so a
broker's ``DELETE /query/{id}`` (admin port) can stop their work (``engine.common.cancel``).

A hybrid table's query reaches a server twice under one id (its OFFLINE and REALTIME
halves); Pinot's ids for them end in ``_O`` and ``_R``, which a cancel may give or leave out.
"""

from __future__ import annotations

import threading

from engine.common.cancel import WorkToken
from engine.spi.table_name import OFFLINE, REALTIME

_TYPE_SUFFIXES = {"_O": OFFLINE, "_R": REALTIME}


class RunningQueries:
    def __init__(self) -> None:
        self._tokens: dict[str, list[tuple[str, WorkToken]]] = {}
        self._lock = threading.Lock()

    def register(self, query_id: str, table_type: str, token: WorkToken) -> None:
        with self._lock:
            self._tokens.setdefault(query_id, []).append((table_type, token))

    def unregister(self, query_id: str, token: WorkToken) -> None:
        with self._lock:
            entries = self._tokens.get(query_id)
            if entries is None:
                return
            entries[:] = [e for e in entries if e[1] is not token]
            if not entries:
                del self._tokens[query_id]

    def cancel(self, query_id: str) -> int:
        """Cancel the work of ``query_id`` (with or without ``_O``/``_R``); how many parts
        were running (0: unknown here, or already finished)."""
        table_type = _TYPE_SUFFIXES.get(query_id[-2:])
        base = query_id[:-2] if table_type else query_id
        with self._lock:
            entries = list(self._tokens.get(base, ()))
        cancelled = 0
        for entry_type, token in entries:
            if table_type is None or entry_type == table_type:
                token.cancel()
                cancelled += 1
        return cancelled

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._tokens)
