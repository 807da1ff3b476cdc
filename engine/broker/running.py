"""The queries a broker is running (Pinot's ``GET /queries``) and their cancellation
(``DELETE /query/{id}``): the broker marks the query cancelled and tells each server it asked
to stop (``DELETE <server admin>/query/<brokerId>_<requestId>``); the servers stop their work
at its next checkpoint and answer QUERY_CANCELLATION (503), which the broker returns.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import urllib3

from engine.broker.routes import ServerAddress


@dataclasses.dataclass(slots=True)
class RunningQuery:
    request_id: int
    sql: str
    client_query_id: str | None
    servers: tuple[ServerAddress, ...] = ()  # set once the query is routed
    cancelled: bool = False
    # for the query log: the servers' answers and the segments no server could serve
    responses: list = dataclasses.field(default_factory=list)
    unavailable: int = 0


class RunningQueries:
    def __init__(self, broker_id: str, http: urllib3.PoolManager) -> None:
        self.broker_id = broker_id
        self.http = http
        self._by_id: dict[int, RunningQuery] = {}
        self._by_client_id: dict[str, RunningQuery] = {}

    # (single dict operations are atomic in CPython: the query path takes no lock)
    def register(self, request_id: int, sql: str, client_query_id: str | None) -> RunningQuery:
        query = RunningQuery(request_id, sql, client_query_id or None)
        self._by_id[request_id] = query
        if query.client_query_id:
            self._by_client_id[query.client_query_id] = query
        return query

    def unregister(self, query: RunningQuery) -> None:
        self._by_id.pop(query.request_id, None)
        if query.client_query_id and self._by_client_id.get(query.client_query_id) is query:
            self._by_client_id.pop(query.client_query_id, None)

    def set_client_query_id(self, query: RunningQuery, client_query_id: str) -> None:
        """The id given by ``SET clientQueryId = '...'`` in the SQL (known once planned)."""
        query.client_query_id = client_query_id
        self._by_client_id[client_query_id] = query

    def listing(self) -> dict[str, str]:
        """``{requestId: sql}``, Pinot's ``GET /queries``."""
        return {str(q.request_id): q.sql for q in list(self._by_id.values())}

    def find(self, query_id: str, *, client: bool) -> RunningQuery | None:
        """The running query of an internal id (``client=False``; raises ValueError when it
        is not a number) or of a ``clientQueryId``."""
        if client:
            return self._by_client_id.get(query_id)
        return self._by_id.get(int(query_id))

    def cancel(self, query: RunningQuery, timeout_s: float,
               headers: dict[str, str] | None = None) -> dict[str, int]:  # fmt: skip
        """Mark ``query`` cancelled and ask its servers, in parallel, to stop; ``{host:port:
        HTTP status}`` of their answers (-1: no answer within ``timeout_s``). ``headers``
        go with each request (the cancel's own credentials, for servers that check them)."""
        query.cancelled = True
        servers = query.servers
        if not servers:
            return {}
        path = f"/query/{self.broker_id}_{query.request_id}"
        with ThreadPoolExecutor(min(len(servers), 8)) as pool:
            statuses = pool.map(lambda s: self._cancel_on(s, path, timeout_s, headers), servers)
            return {
                f"{s.host}:{s.admin_port}": status
                for s, status in zip(servers, statuses, strict=True)
            }

    def _cancel_on(self, server: ServerAddress, path: str, timeout_s: float,
                   headers: dict[str, str] | None) -> int:  # fmt: skip
        url = f"http://{server.host}:{server.admin_port}{path}"
        try:
            return self.http.request(
                "DELETE", url, headers=headers, timeout=urllib3.Timeout(total=timeout_s),
                retries=False,
            ).status  # fmt: skip
        except urllib3.exceptions.HTTPError:
            return -1
