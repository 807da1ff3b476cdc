"""The controller's long-lived background work inside the serving process.

`start()` runs once per controller process after the WSGI worker has booted (see
config/gunicorn.py) and `stop()` when it exits. A ControllerRuntime:

- registers the controller (``CONFIGS/PARTICIPANT/Controller_<host>_<port>`` and its
  ephemeral ``LIVEINSTANCES`` entry, written again after a ZooKeeper session is lost);
- takes part in the leader election (kazoo Election under ``CONTROLLER/LEADER``);
- aggregates the external views from the instances' current states every
  EXTERNAL_VIEW_INTERVAL_S, and runs each registered periodic task at its frequency on an
  APScheduler BackgroundScheduler. Both work only while this controller is the leader, so a
  second controller serves the API and takes over when the leader goes away.
"""

from __future__ import annotations

import datetime as dt
import logging
import socket
import threading
from collections.abc import Callable

from apscheduler.schedulers.background import BackgroundScheduler
from django.db import close_old_connections
from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError, KazooException
from kazoo.protocol.states import KazooState
from kazoo.recipe.election import Election

from engine.clusterstate import (
    ClusterStore,
    InstanceConfig,
    InstanceType,
    ZNRecord,
    ZooKeeperUnavailableError,
    session_id_of,
)
from engine.clusterstate.tags import CONTROLLER_TAG, instance_id
from engine.common.clock import now_ms
from engine.runtime import FollowLoop

log = logging.getLogger(__name__)


class ControllerRuntime:
    def __init__(
        self,
        connect: Callable[[], KazooClient],
        cluster_name: str,
        host: str,
        port: int,
        *,
        task_frequencies_s: dict[str, float] | None = None,
        initial_delay_s: float = 120.0,
        external_view_interval_s: float = 1.0,
        run_task: Callable[[ClusterStore, str], object] | None = None,
        retry_interval_s: float = 2.0,
        task_driver: Callable[[ClusterStore, bool], None] | None = None,
        task_driver_interval_s: float = 0.25,
    ):
        self.connect = connect
        self.cluster_name = cluster_name
        self.instance_id = instance_id(InstanceType.CONTROLLER, host, port)
        self.host, self.port = host, port
        self.task_frequencies_s = task_frequencies_s or {}
        self.initial_delay_s = initial_delay_s
        self.external_view_interval_s = external_view_interval_s
        self.run_task = run_task
        self.retry_interval_s = retry_interval_s
        self.task_driver = task_driver
        self.task_driver_interval_s = task_driver_interval_s
        self.client: KazooClient | None = None
        self.store: ClusterStore | None = None
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._leader = threading.Event()
        self._lost = threading.Event()
        self._election: Election | None = None
        self._scheduler: BackgroundScheduler | None = None
        self._threads: list[threading.Thread] = []
        self._external_views = _ExternalViewLoop(self)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start in the background; retries until ZooKeeper is reachable."""
        self._spawn(self._boot, "controller-boot")

    def wait_started(self, timeout: float) -> bool:
        return self._started.wait(timeout)

    def stop(self) -> None:
        """Stop everything and close the session (idempotent)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._lost.set()
        if self._election is not None:
            self._election.cancel()
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        self._external_views.stop(timeout_s=5)
        if self.client is not None:
            from controller.zk import close_client

            close_client(self.client)
        for thread in self._threads:
            thread.join(timeout=5)
        self._leader.clear()

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set() and self.client is not None and self.client.connected

    def wait_leader(self, timeout: float) -> bool:
        return self._leader.wait(timeout)

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _boot(self) -> None:
        while not self._stopping.is_set():
            try:
                self.client = self.connect()
                self.store = ClusterStore(self.client, self.cluster_name)
                self.store.ensure_cluster()
                self._register()
                break
            except (ZooKeeperUnavailableError, KazooException) as exc:
                log.warning("controller cannot reach ZooKeeper yet (%s); retrying", exc)
                self._stopping.wait(self.retry_interval_s)
        if self._stopping.is_set():
            return
        self.client.add_listener(self._on_state)
        self._scheduler = self._make_scheduler()
        self._scheduler.start()
        self._spawn(self._election_loop, "controller-election")
        self._external_views.start()
        if self.task_driver is not None:
            self._spawn(self._task_driver_loop, "controller-task-driver")
        self._started.set()
        log.info("controller %s started", self.instance_id)

    def _register(self) -> None:
        existing = self.store.instance_config(self.instance_id)
        config = existing or InstanceConfig(
            self.instance_id, self.host, self.port, [CONTROLLER_TAG]
        )
        self.store.put_instance_config(config)
        self.store.register_live_instance(self.instance_id)

    def _on_state(self, state: str) -> None:
        # kazoo calls listeners on its event thread, which must not block
        if state == KazooState.LOST:
            self._lost.set()
        elif state == KazooState.CONNECTED and self._lost.is_set() and not self._stopping.is_set():
            self._spawn(self._after_reconnect, "controller-reconnect")

    def _after_reconnect(self) -> None:
        """A new session: ephemeral nodes are gone; write the live instance again."""
        try:
            self.store.register_live_instance(self.instance_id)
            log.info("controller %s re-registered after a new ZooKeeper session", self.instance_id)
        except (ZooKeeperUnavailableError, KazooException) as exc:
            log.warning("re-registering the controller failed: %s", exc)

    # --- leadership ------------------------------------------------------------------------
    def _election_loop(self) -> None:
        while not self._stopping.is_set():
            if not self.client.connected:
                self._stopping.wait(0.2)
                continue
            self._lost.clear()
            self._election = Election(
                self.client, self.store.paths.controller_leader, self.instance_id
            )
            try:
                self._election.run(self._lead)
            except CancelledError:
                pass
            except (KazooException, ZooKeeperUnavailableError) as exc:
                log.warning("controller election interrupted: %s", exc)
                self._stopping.wait(self.retry_interval_s)

    def _lead(self) -> None:
        log.info("controller %s is the leader", self.instance_id)
        try:
            record = ZNRecord(
                id=self.instance_id,
                simple_fields={
                    "LEADER": self.instance_id,
                    "HOST": socket.gethostname(),
                    "SESSION_ID": session_id_of(self.client),
                    "ELECTED_AT_MS": str(now_ms()),
                },
            )
            self.store.put_raw(self.store.paths.controller_leader, record.to_bytes())
        except (ZooKeeperUnavailableError, KazooException) as exc:
            log.warning("cannot write the leader record: %s", exc)
        self._leader.set()
        try:
            self._lost.wait()
        finally:
            self._leader.clear()
            log.info("controller %s is no longer the leader", self.instance_id)

    # --- scheduled work --------------------------------------------------------------------
    def _make_scheduler(self) -> BackgroundScheduler:
        scheduler = BackgroundScheduler(daemon=True, timezone=dt.UTC)
        now = dt.datetime.now(dt.UTC)
        for name, seconds in self.task_frequencies_s.items():
            scheduler.add_job(
                self._run_periodic,
                "interval",
                args=[name],
                seconds=seconds,
                id=name,
                max_instances=1,
                coalesce=True,
                next_run_time=now + dt.timedelta(seconds=self.initial_delay_s),
            )
        return scheduler

    def _task_driver_loop(self) -> None:
        """The minion task driver (tasks.controller.drive): works on the leader, drops its cron
        jobs elsewhere; a loop of its own, since dispatch latency depends on how soon it runs
        after a subtask finishes."""
        while not self._stopping.wait(self.task_driver_interval_s):
            close_old_connections()
            try:
                self.task_driver(self.store, self.is_leader)
            except Exception:  # one failed pass must not stop the driver
                log.exception("minion task driver pass failed")
            finally:
                close_old_connections()
        self.task_driver(self.store, False)  # stopping: drop this controller's cron jobs

    def _run_periodic(self, name: str) -> None:
        if not self.is_leader or self.run_task is None:
            return
        close_old_connections()
        try:
            self.run_task(self.store, name)
        except Exception:  # one failed run must not stop the schedule
            log.exception("periodic task %s failed", name)
        finally:
            close_old_connections()


class _ExternalViewLoop(FollowLoop):
    """Aggregates the external views every ``external_view_interval_s`` while this controller
    leads. A loop of its own rather than a scheduler job: a slow pass delays the next one
    instead of piling up; while ZooKeeper is away it retries at the same interval."""

    while_unavailable = "external views not aggregated"

    def __init__(self, runtime: ControllerRuntime) -> None:
        interval = runtime.external_view_interval_s
        super().__init__("controller-external-view", interval_s=interval,
                         backoff_s=interval, max_backoff_s=interval)  # fmt: skip
        self.runtime = runtime

    def run_once(self) -> None:
        if self.runtime.is_leader:
            self.runtime.store.refresh_external_views()


_runtime: ControllerRuntime | None = None


def start() -> None:
    """Start this controller process's runtime from the Django settings."""
    global _runtime
    from django.conf import settings

    from cluster.periodic import frequency_seconds, get_task, run_task, task_names
    from controller import zk

    frequencies = {name: frequency_seconds(get_task(name)) for name in task_names()}
    # a negative period (Pinot's "-1s") turns a task's schedule off; it can still be run
    frequencies = {name: seconds for name, seconds in frequencies.items() if seconds}
    _runtime = ControllerRuntime(
        zk.get_zk,
        settings.CLUSTER_NAME,
        settings.CONTROLLER_HOST,
        settings.CONTROLLER_PORT,
        task_frequencies_s=frequencies,
        initial_delay_s=settings.PERIODIC_TASK_INITIAL_DELAY_S,
        external_view_interval_s=settings.EXTERNAL_VIEW_INTERVAL_S,
        run_task=lambda store, name: run_task(store, name),
        task_driver=_task_driver_tick,
        task_driver_interval_s=settings.TASK_DRIVER_INTERVAL_S,
    )
    _runtime.start()


def _task_driver_tick(store: ClusterStore, leading: bool) -> None:
    from tasks.controller import drive

    drive(store, leading)


def stop() -> None:
    global _runtime
    if _runtime is not None:
        _runtime.stop()
        _runtime = None


def current() -> ControllerRuntime | None:
    return _runtime
