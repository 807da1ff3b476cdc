"""The queries a server is running, by Pinot's query id ``<brokerId>_<requestId>``, so a
broker's ``DELETE /query/{id}`` (admin port) can stop their work (``engine.common.cancel``).

A hybrid table's query reaches a server twice under one id (its OFFLINE and REALTIME
halves); Pinot's ids for them end in ``_O`` and ``_R``, which a cancel may give or leave out.
"""

from __future__ import annotations

from engine.common.cancel import WorkToken
from engine.spi.table_name import OFFLINE, REALTIME

_TYPE_SUFFIXES = {"_O": OFFLINE, "_R": REALTIME}


class RunningQueries:
    """Registering and removing a query are single dict operations (atomic in CPython), so the
    query path takes no lock here."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], WorkToken] = {}  # (query id, table type) -> token

    def register(self, query_id: str, table_type: str, token: WorkToken) -> None:
        self._tokens[(query_id, table_type)] = token

    def unregister(self, query_id: str, table_type: str, token: WorkToken) -> None:
        if self._tokens.get((query_id, table_type)) is token:
            self._tokens.pop((query_id, table_type), None)

    def cancel(self, query_id: str) -> int:
        """Cancel the work of ``query_id`` (with or without ``_O``/``_R``); how many parts
        were running (0: unknown here, or already finished)."""
        table_type = _TYPE_SUFFIXES.get(query_id[-2:])
        base = query_id[:-2] if table_type else query_id
        types = [table_type] if table_type else [OFFLINE, REALTIME, ""]
        cancelled = 0
        for kind in types:
            token = self._tokens.get((base, kind))
            if token is not None:
                token.cancel()
                cancelled += 1
        return cancelled

    def ids(self) -> list[str]:
        return sorted({query_id for query_id, _ in list(self._tokens)})
