"""An instance's membership in the cluster: its ZooKeeper session, its instance config and its
ephemeral live-instance node.

kazoo reconnects by itself (``connection_retry`` retries forever). A lost session takes the
live-instance node with it, so ``ensure_registered`` notices the new session id and registers
again. ``Membership`` is the follow loop that calls it whenever ``changed`` fires; the server's
and the broker's loops are Memberships that also follow the cluster's state, and a minion runs
a plain one. Servers, brokers and minions all use this module.
"""

from __future__ import annotations

import logging
import threading

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from engine.clusterstate import (
    ClusterStore,
    InstanceConfig,
    InstanceType,
    ZooKeeperUnavailableError,
    session_id_of,
)
from engine.clusterstate.tags import default_tags
from engine.runtime.follow import FollowLoop

log = logging.getLogger(__name__)


class Participant:
    """``config`` is the instance config to register; when ZooKeeper already has one for the
    same id, its tags and enabled flag win (an operator may have retagged the instance)."""

    def __init__(
        self,
        zk_address: str,
        cluster_name: str,
        config: InstanceConfig,
        *,
        tenant_isolation: bool = True,
        session_timeout_s: float = 10.0,
        request_timeout_s: float = 5.0,
    ) -> None:
        self.config = config
        self.tenant_isolation = tenant_isolation
        self.client = KazooClient(
            hosts=zk_address,
            timeout=session_timeout_s,
            connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0),
        )
        self.store = ClusterStore(self.client, cluster_name, timeout_s=request_timeout_s)
        self.changed = threading.Event()  # set on every connection-state change
        self.registered_session: str | None = None
        self._zk_address = zk_address
        self._stopping = False
        self.started = False

    @property
    def instance_id(self) -> str:
        return self.config.instance_id

    @property
    def kind(self) -> InstanceType | None:
        return InstanceType.of_instance(self.instance_id)

    def start(self, connect_timeout_s: float = 30.0) -> None:
        self.client.add_listener(self._on_state)
        try:
            self.client.start(timeout=connect_timeout_s)
        except KazooTimeoutError as exc:
            self.client.stop()
            raise ZooKeeperUnavailableError(
                f"cannot connect to ZooKeeper at {self._zk_address} within "
                f"{connect_timeout_s:g} s; check SPRIG_ZK and that ZooKeeper is running"
            ) from exc
        self.started = True  # from here on kazoo reconnects by itself
        self.changed.set()

    def stop(self) -> None:
        """Close the session: the live-instance node disappears at once."""
        self._stopping = True
        try:
            self.client.stop()
            self.client.close()
        except Exception:  # closing a broken client must not hide the caller's own error
            log.debug("closing the ZooKeeper client failed", exc_info=True)

    @property
    def connected(self) -> bool:
        return self.client.connected

    def session_id(self) -> str:
        return session_id_of(self.client)

    def ensure_registered(self) -> bool:
        """Register when this session has not been registered yet; True if it registered now.
        Raises ZooKeeperUnavailableError while ZooKeeper is unreachable."""
        session = self.session_id()
        if session == self.registered_session:
            return False
        self.register()
        self.registered_session = session
        return True

    def register(self) -> None:
        store = self.store
        store.ensure_cluster()
        existing = store.instance_config(self.instance_id)
        config = self.config
        if existing is not None:
            config.tags = existing.tags or config.tags
            config.enabled = existing.enabled
        elif not config.tags and self.kind is not None:
            config.tags = default_tags(self.kind, self.tenant_isolation)
        config.self_registered = True  # the address is this process's own, not an API caller's
        store.put_instance_config(config)
        store.register_live_instance(self.instance_id)
        log.info("registered %s (tags %s) in session %s", self.instance_id, config.tags,
                 self.session_id())  # fmt: skip

    def _on_state(self, state: str) -> None:
        # runs on kazoo's event thread: never block here
        if self._stopping:
            pass
        elif state == KazooState.LOST:
            log.warning("ZooKeeper session lost; reconnecting")
            self.registered_session = None
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended; reconnecting")
        else:
            log.info("ZooKeeper connected")
        self.changed.set()


class Membership(FollowLoop):
    """Keeps ``participant`` registered: connects (retrying while ZooKeeper is down, when the
    owner has not connected it yet) and registers again in every new session. Subclasses
    follow the cluster in ``follow`` after each check, and republish what the lost session
    took with it in ``on_new_session``."""

    def __init__(
        self,
        participant: Participant,
        name: str = "zk-membership",
        *,
        interval_s: float = 10.0,
        connect_timeout_s: float = 10.0,
        **backoff,
    ) -> None:
        super().__init__(name, wake=participant.changed, interval_s=interval_s, **backoff)
        self.participant = participant
        self.connect_timeout_s = connect_timeout_s

    def run_once(self) -> None:
        participant = self.participant
        if not participant.started:
            participant.start(connect_timeout_s=self.connect_timeout_s)
        if not participant.connected:
            raise ZooKeeperUnavailableError("not connected")
        if participant.ensure_registered():
            self.on_new_session()
        self.follow()

    def on_new_session(self) -> None:
        """Called once registered in a new session (the first one included)."""

    def follow(self) -> None:
        """The cluster-following part of a pass, after registration."""
