"""The controller's view of running queries (Pinot's ``PinotRunningQueryResource``): every live
broker's ``GET /queries``, and cancels forwarded to the broker that runs the query."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlencode

import orjson
import urllib3

from cluster.logic.forward_query import broker_target, live_brokers
from controller.errors import NotFound, ServiceUnavailable
from engine.clusterstate import ClusterStore, InstanceConfig
from engine.runtime.outbound import OutboundRefused, opened


def running_queries(store: ClusterStore, timeout_ms: int,
                    headers: dict[str, str] | None = None) -> dict[str, dict[str, str]]:  # fmt: skip
    """``{brokerInstanceId: {requestId: sql}}`` over the live brokers; a broker that does not
    answer within ``timeout_ms`` is left out (as Pinot does). ``headers`` go with each request
    (credentials for authenticating brokers), here and in the cancels."""
    brokers = live_brokers(store, None)
    if not brokers:
        return {}

    def ask(broker: tuple[str, InstanceConfig]) -> tuple[str, dict | None]:
        ident, config = broker
        try:
            status, data = _call(config, "GET", "/queries", timeout_ms / 1000, headers)
            return ident, orjson.loads(data) if status == 200 else None
        except (OutboundRefused, urllib3.exceptions.HTTPError, orjson.JSONDecodeError):
            return ident, None

    with ThreadPoolExecutor(min(len(brokers), 8)) as pool:
        answers = list(pool.map(ask, brokers))
    return {ident: queries for ident, queries in answers if queries is not None}


def cancel_query(
    store: ClusterStore, broker_id: str, query_id: str, *, client: bool, timeout_ms: int,
    verbose: bool, headers: dict[str, str] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """Forward ``DELETE /query/{id}`` to ``broker_id``: (its HTTP status, its text)."""
    broker = next((b for b in live_brokers(store, None) if b[0] == broker_id), None)
    if broker is None:
        raise NotFound(f"Broker: {broker_id} is not live")
    return _delete(broker, query_id, client=client, timeout_ms=timeout_ms, verbose=verbose,
                   headers=headers)  # fmt: skip


def cancel_client_query(
    store: ClusterStore, client_query_id: str, *, timeout_ms: int, verbose: bool,
    headers: dict[str, str] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """Try every live broker with ``client=true``; the first 200 wins; 404 when none runs it."""
    for broker in live_brokers(store, None):
        status, text = _delete(broker, client_query_id, client=True, timeout_ms=timeout_ms,
                               verbose=verbose, headers=headers)  # fmt: skip
        if status == 200:
            return status, text
    raise NotFound(f"Client query: {client_query_id} not found on any broker")


def _delete(
    broker: tuple[str, InstanceConfig], query_id: str, *, client: bool, timeout_ms: int,
    verbose: bool, headers: dict[str, str] | None,
) -> tuple[int, str]:  # fmt: skip
    ident, config = broker
    params = urlencode({"client": str(client).lower(), "timeoutMs": timeout_ms,
                        "verbose": str(verbose).lower()})  # fmt: skip
    path = f"/query/{quote(query_id, safe='')}?{params}"
    try:
        status, data = _call(config, "DELETE", path, timeout_ms / 1000 + 5, headers)
    except (OutboundRefused, urllib3.exceptions.HTTPError) as exc:
        why = str(exc) if isinstance(exc, OutboundRefused) else type(exc).__name__
        raise ServiceUnavailable(f"Broker {ident} did not answer the cancel ({why})") from exc
    return status, data.decode(errors="replace")  # the broker's own answer, as Pinot relays it


def _call(config: InstanceConfig, method: str, path: str, timeout_s: float,
          headers: dict[str, str] | None) -> tuple[int, bytes]:  # fmt: skip
    with opened(broker_target(config, path), method, headers=headers,
                timeout=urllib3.Timeout(connect=timeout_s, read=timeout_s)) as response:  # fmt: skip
        return response.status, response.read()
