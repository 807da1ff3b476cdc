"""The controller process's one ZooKeeper session, created on first use.

Request handlers, the runtime and the task manager share it; a minion's executors, which run
with the same Django settings, open their own the same way. kazoo reconnects by itself after an outage
(``connection_retry`` retries forever); while it is disconnected every ClusterStore call fails
fast with ZooKeeperUnavailableError, which the API answers with 503.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, KeeperState
from kazoo.retry import KazooRetry

from engine.clusterstate import ClusterStore, ZooKeeperUnavailableError

log = logging.getLogger(__name__)

_lock = threading.Lock()
_client: KazooClient | None = None
_address: str | None = None
_ready_clusters: set[tuple[str, str]] = set()


def new_client(address: str) -> KazooClient:
    """A started kazoo client for ``address``; ZooKeeperUnavailableError if it cannot connect
    within ``ZK_CONNECT_TIMEOUT_S``."""
    client = KazooClient(
        hosts=address,
        timeout=settings.ZK_SESSION_TIMEOUT_S,
        connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0),
    )
    try:
        client.start(timeout=settings.ZK_CONNECT_TIMEOUT_S)
    except KazooTimeoutError as exc:
        raise ZooKeeperUnavailableError(
            f"cannot connect to ZooKeeper at {address} within "
            f"{settings.ZK_CONNECT_TIMEOUT_S:g} s; check SPRIG_ZK and that ZooKeeper is running"
        ) from exc
    client.add_listener(_log_state)
    return client


def _log_state(state: str) -> None:
    if state == KazooState.LOST:
        log.warning("ZooKeeper session lost; reconnecting")
    elif state == KazooState.SUSPENDED:
        log.warning("ZooKeeper connection suspended; reconnecting")
    else:
        log.info("ZooKeeper connected")


def get_zk() -> KazooClient:
    """This process's ZooKeeper client for ``settings.ZK_ADDRESS`` (created lazily; replaced
    when the setting changes, as it does between tests)."""
    global _client, _address
    address = settings.ZK_ADDRESS
    with _lock:
        if (
            _client is not None
            and _address == address
            and _client.client_state != KeeperState.CLOSED
        ):
            return _client
        if _client is not None:
            _close(_client)
            _client = None
        _client = new_client(address)
        _address = address
        return _client


def get_store() -> ClusterStore:
    """A ClusterStore over the process's client, with the cluster skeleton in place."""
    store = ClusterStore(get_zk(), settings.CLUSTER_NAME, timeout_s=settings.ZK_REQUEST_TIMEOUT_S,
                         max_znode_bytes=settings.ZK_MAX_ZNODE_BYTES)  # fmt: skip
    key = (settings.ZK_ADDRESS, settings.CLUSTER_NAME)
    if key not in _ready_clusters:
        store.ensure_cluster()
        _ready_clusters.add(key)
    return store


def close_zk() -> None:
    global _client, _address
    with _lock:
        if _client is not None:
            _close(_client)
        _client = None
        _address = None


def close_client(client: KazooClient) -> None:
    """Close a client quietly (its end is intended, so no "session lost" warning)."""
    if client is _client:
        close_zk()
    else:
        _close(client)


def _close(client: KazooClient) -> None:
    try:
        client.remove_listener(_log_state)
        client.stop()
        client.close()
    except Exception:  # closing a broken client must not hide the caller's own error
        log.debug("closing the ZooKeeper client failed", exc_info=True)
