"""The one follow loop of the engine processes: a background thread that runs a pass whenever
it is poked (a ZooKeeper watch fired, the connection changed state) and at least every
``interval_s``, and retries a failed pass with a growing delay.

The server's ideal-state follower, the broker's routing and every process's ZooKeeper
registration (``engine.runtime.participant.Membership``) are subclasses: they write
``run_once`` and nothing else of the loop.

ZooKeeper being unreachable is expected (it restarts, the network blips): the pass is retried
after ``backoff_s`` seconds, doubled after every further failure up to ``max_backoff_s``,
and logged as a warning. Any other exception is a bug in the pass; it is logged with its
traceback and retried the same way, so one bad pass never stops the process following.
"""

from __future__ import annotations

import logging
import threading

from kazoo.exceptions import KazooException

from engine.clusterstate import ZooKeeperUnavailableError

log = logging.getLogger(__name__)

UNAVAILABLE = (ZooKeeperUnavailableError, KazooException)


class FollowLoop:
    """Subclasses implement ``run_once``. ``wake`` is the event that pokes the loop; pass a
    participant's ``changed`` to wake on its connection-state changes too."""

    #: what the process keeps doing while ZooKeeper is away, for the warning
    while_unavailable = "retrying"

    def __init__(
        self,
        name: str,
        *,
        wake: threading.Event | None = None,
        interval_s: float = 10.0,
        backoff_s: float = 0.5,
        max_backoff_s: float = 5.0,
    ) -> None:
        if interval_s <= 0 or backoff_s <= 0 or max_backoff_s < backoff_s:
            raise ValueError(
                f"{name}: need interval_s > 0 and 0 < backoff_s <= max_backoff_s, got "
                f"{interval_s}, {backoff_s}, {max_backoff_s}"
            )
        self.name = name
        self.wake = wake if wake is not None else threading.Event()
        self.interval_s = interval_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.passes = 0  # completed passes, for readiness checks
        self.failures = 0  # consecutive failed passes; 0 after a good one
        self.ready = threading.Event()  # set once a pass has completed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> None:
        """One pass. Raise ZooKeeperUnavailableError or a KazooException while ZooKeeper is
        unreachable; the pass is then retried."""
        raise NotImplementedError

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Run the first pass at once, then on every poke and every ``interval_s``."""
        self._stop.clear()
        self.wake.set()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop after the pass in progress (waiting up to ``timeout_s`` seconds for it)."""
        self._stop.set()
        self.wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def poke(self, _event=None) -> None:
        """Run a pass soon. Takes (and ignores) a kazoo watch event, so it can be a watch."""
        self.wake.set()

    # --- the loop --------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            self.wake.wait(self.interval_s)
            if self._stop.is_set():
                return
            self.wake.clear()
            try:
                self.run_once()
            except UNAVAILABLE as exc:
                self._retry_later(f"ZooKeeper unavailable ({exc}); {self.while_unavailable}")
            except Exception:  # a bug in one pass must not stop the process following
                log.exception("%s: pass failed", self.name)
                self._retry_later(None)
            else:
                self.passes += 1
                self.failures = 0
                self.ready.set()

    def retry_delay_s(self) -> float:
        """The wait before the next attempt after ``failures`` failed passes in a row."""
        return min(self.backoff_s * 2 ** max(self.failures - 1, 0), self.max_backoff_s)

    def _retry_later(self, warning: str | None) -> None:
        self.failures += 1
        delay = self.retry_delay_s()
        if warning is not None:
            log.warning("%s: %s; next try in %.1f s", self.name, warning, delay)
        self._stop.wait(delay)
        self.wake.set()
