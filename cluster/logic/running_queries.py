"""The controller's view of running queries (Pinot's ``PinotRunningQueryResource``): every live
broker's ``GET /queries``, and cancels forwarded to the broker that runs the query."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import requests

from cluster.logic.forward_query import live_brokers
from controller.errors import NotFound, ServiceUnavailable
from engine.clusterstate import ClusterStore


def running_queries(store: ClusterStore, timeout_ms: int) -> dict[str, dict[str, str]]:
    """``{brokerInstanceId: {requestId: sql}}`` over the live brokers; a broker that does not
    answer within ``timeout_ms`` is left out (as Pinot does)."""
    brokers = live_brokers(store, None)
    if not brokers:
        return {}

    def ask(broker: tuple[str, str, int]) -> tuple[str, dict | None]:
        ident, host, port = broker
        try:
            response = requests.get(f"http://{host}:{port}/queries", timeout=timeout_ms / 1000)
        except requests.RequestException:
            return ident, None
        return ident, response.json() if response.status_code == 200 else None

    with ThreadPoolExecutor(min(len(brokers), 8)) as pool:
        answers = list(pool.map(ask, brokers))
    return {ident: queries for ident, queries in answers if queries is not None}


def cancel_query(
    store: ClusterStore, broker_id: str, query_id: str, *, client: bool, timeout_ms: int,
    verbose: bool,
) -> tuple[int, str]:  # fmt: skip
    """Forward ``DELETE /query/{id}`` to ``broker_id``: (its HTTP status, its text)."""
    broker = next((b for b in live_brokers(store, None) if b[0] == broker_id), None)
    if broker is None:
        raise NotFound(f"Broker: {broker_id} is not live")
    return _delete(broker, query_id, client=client, timeout_ms=timeout_ms, verbose=verbose)


def cancel_client_query(
    store: ClusterStore, client_query_id: str, *, timeout_ms: int, verbose: bool
) -> tuple[int, str]:
    """Try every live broker with ``client=true``; the first 200 wins; 404 when none runs it."""
    for broker in live_brokers(store, None):
        status, text = _delete(broker, client_query_id, client=True, timeout_ms=timeout_ms,
                               verbose=verbose)  # fmt: skip
        if status == 200:
            return status, text
    raise NotFound(f"Client query: {client_query_id} not found on any broker")


def _delete(
    broker: tuple[str, str, int], query_id: str, *, client: bool, timeout_ms: int, verbose: bool
) -> tuple[int, str]:
    ident, host, port = broker
    params = {"client": str(client).lower(), "timeoutMs": timeout_ms,
              "verbose": str(verbose).lower()}  # fmt: skip
    try:
        response = requests.delete(
            f"http://{host}:{port}/query/{requests.utils.quote(query_id, safe='')}",
            params=params, timeout=timeout_ms / 1000 + 5,
        )  # fmt: skip
    except requests.RequestException as exc:
        raise ServiceUnavailable(f"Broker {ident} did not answer the cancel: {exc}") from exc
    return response.status_code, response.text
