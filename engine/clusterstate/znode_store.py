"""ZnodeStore: bounded reads and writes of znodes and ZNRecords over one kazoo client.

Every call is bounded by ``timeout_s`` and fails fast with ZooKeeperUnavailableError when the
client is not connected, so a caller never blocks on a queued request while ZooKeeper is down.
Read-modify-write goes through ``update`` (znode version compare-and-set, retried). The
cluster's layout on top of it is ``engine.clusterstate.store.ClusterStore``.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat

from engine.clusterstate.errors import (
    ConcurrentUpdateError,
    ZnodeTooLargeError,
    ZooKeeperUnavailableError,
)
from engine.clusterstate.znrecord import ZNRecord

# below ZooKeeper's default jute.maxbuffer (1 MiB - 1 for a whole packet: data, path, header)
DEFAULT_MAX_ZNODE_BYTES = 1_000_000
_MAX_CAS_ATTEMPTS = 100
_CAS_BACKOFF_CAP_S = 0.1


def session_id_of(client: KazooClient) -> str:
    """The client's ZooKeeper session id in hex, as Helix writes it."""
    client_id = client.client_id
    if not client_id:
        raise ZooKeeperUnavailableError("the ZooKeeper client has no session")
    return format(client_id[0], "x")


class ZnodeStore:
    """Znodes and ZNRecords by path; each request waits at most ``timeout_s``, and a write of
    more than ``max_znode_bytes`` is refused with ZnodeTooLargeError before it is sent."""

    def __init__(self, client: KazooClient, *, timeout_s: float = 10.0,
                 max_znode_bytes: int = DEFAULT_MAX_ZNODE_BYTES):  # fmt: skip
        self.client = client
        self.timeout_s = timeout_s
        self.max_znode_bytes = max_znode_bytes

    def _fits(self, path: str, data: bytes) -> bytes:
        if len(data) > self.max_znode_bytes:
            raise ZnodeTooLargeError(path, len(data), self.max_znode_bytes)
        return data

    def _wait(self, make_async: Callable[[], object]):
        if not self.client.connected:
            raise ZooKeeperUnavailableError(
                "ZooKeeper is not reachable (the controller is reconnecting); retry shortly"
            )
        try:
            return make_async().get(timeout=self.timeout_s)
        except KazooTimeoutError as exc:
            raise ZooKeeperUnavailableError(
                f"ZooKeeper did not answer within {self.timeout_s:g} s; retry shortly"
            ) from exc
        except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError):
            raise
        except KazooException as exc:
            raise ZooKeeperUnavailableError(
                f"ZooKeeper request failed ({type(exc).__name__}); retry shortly"
            ) from exc

    def get_raw(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return self._wait(lambda: self.client.get_async(path))
        except NoNodeError:
            return None

    def stat(self, path: str) -> ZnodeStat | None:
        return self._wait(lambda: self.client.exists_async(path))

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self._wait(lambda: self.client.get_children_async(path)))
        except NoNodeError:
            return []

    def ensure_path(self, path: str) -> None:
        if self.stat(path) is not None:
            return
        with contextlib.suppress(NodeExistsError):
            self._wait(lambda: self.client.create_async(path, b"", makepath=True))

    def put_raw(self, path: str, data: bytes, *, version: int = -1, ephemeral: bool = False):
        """Create or overwrite ``path``; with ``version`` >= 0, only if it is still that version."""
        self._fits(path, data)
        if ephemeral:
            with contextlib.suppress(NoNodeError):
                self._wait(lambda: self.client.delete_async(path))
            self._wait(lambda: self.client.create_async(path, data, ephemeral=True, makepath=True))
            return
        try:
            self._wait(lambda: self.client.set_async(path, data, version))
        except NoNodeError:
            if version >= 0:
                raise
            try:
                self._wait(lambda: self.client.create_async(path, data, makepath=True))
            except NodeExistsError:
                self._wait(lambda: self.client.set_async(path, data, -1))

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        """Delete ``path`` (and its children if ``recursive``); False if it did not exist."""
        if recursive:
            for child in self.children(path):
                self.delete(f"{path}/{child}", recursive=True)
        try:
            self._wait(lambda: self.client.delete_async(path))
            return True
        except NoNodeError:
            return False

    def get_record(self, path: str) -> tuple[ZNRecord | None, int]:
        """The ZNRecord at ``path`` and its version; (None, -1) if there is no such znode."""
        got = self.get_raw(path)
        if got is None:
            return None, -1
        data, stat = got
        if not data:
            return None, stat.version
        return ZNRecord.from_bytes(data, where=path), stat.version

    def put_record(self, path: str, record: ZNRecord, *, ephemeral: bool = False) -> None:
        self.put_raw(path, record.to_bytes(), ephemeral=ephemeral)

    def update(
        self, path: str, change: Callable[[ZNRecord | None], ZNRecord | None]
    ) -> ZNRecord | None:
        """Apply ``change`` to the record at ``path`` atomically (compare-and-set on the znode
        version, retried on conflict with jittered exponential back-off, so that writers racing
        on a busy machine do not keep colliding). ``change`` may be called several times;
        returning None leaves the znode as it is."""
        for attempt in range(_MAX_CAS_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, min(_CAS_BACKOFF_CAP_S, 0.001 * 2**attempt)))
            got = self.get_raw(path)
            if got is None:
                new = change(None)
                if new is None:
                    return None
                data = self._fits(path, new.to_bytes())
                try:
                    self._wait(
                        lambda data=data: self.client.create_async(path, data, makepath=True)
                    )
                    return new
                except NodeExistsError:
                    continue
            data, stat = got
            current = ZNRecord.from_bytes(data, where=path) if data else None
            new = change(current)
            if new is None:
                return current
            data = self._fits(path, new.to_bytes())
            try:
                self._wait(lambda data=data, v=stat.version: self.client.set_async(path, data, v))
                return new
            except (BadVersionError, NoNodeError):
                continue
        raise ConcurrentUpdateError(f"{path}: too many concurrent updates, giving up")
