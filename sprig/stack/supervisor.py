"""Keep a local cluster's processes running: restart one that exits, with exponential
backoff, and give up on one that keeps crashing, without touching the others.

Why not a library: supervisor (supervisord) runs as its own daemon with an INI file and
restarts a process that had started successfully at once and forever (its backoff is linear
and only counts failed starts); circus needs ZeroMQ and tornado and pauses a flapping process
for a fixed time; honcho stops everything when one process exits (what this replaces);
simpervisor restarts at once with no limit. None runs readiness probes, keeps the
parent-death signal on the children, or gives up on one process after N crashes within a
window. The policy here is a few dozen lines over `ServiceProcess`, which already owns the
process-group and parent-death handling.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sprig.stack.process import ServiceError, ServiceProcess, signal_group

STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"
GIVEN_UP = "given up"
STOPPED = "stopped"


@dataclass(frozen=True)
class RestartPolicy:
    """When to restart a process that exited, and when to stop trying."""

    first_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_crashes: int = 5
    window_s: float = 300.0

    def delay_s(self, crashes_in_window: int) -> float:
        """Seconds before the next start after the n-th crash (n >= 1) within the window:
        1, 2, 4, ... doubling, capped at `max_delay_s`."""
        return min(self.max_delay_s, self.first_delay_s * 2 ** max(0, crashes_in_window - 1))


def describe_exit(code: int) -> str:
    """'exit code 3' or 'killed by SIGKILL' for a Popen return code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass
class Supervised:
    """One process under supervision and what the supervisor knows of it."""

    process: ServiceProcess
    address: str | None = None
    state: str = RUNNING
    restarts: int = 0
    adopted_at: float = field(default_factory=time.time)
    last_exit: str | None = None
    crashes: deque[float] = field(default_factory=deque)

    @property
    def name(self) -> str:
        return self.process.name

    @property
    def started_at(self) -> float:
        return self.process.started_at or self.adopted_at

    def describe(self, now: float | None = None) -> dict[str, object]:
        now = time.time() if now is None else now
        up = self.state == RUNNING and self.process.alive()
        return {
            "name": self.name,
            "pid": self.process.pid if self.process.alive() else None,
            "state": self.state,
            "restarts": self.restarts,
            "uptime_s": round(now - self.started_at, 1) if up else None,
            "started_at": self.started_at,
            "last_exit": self.last_exit,
            "address": self.address,
            "log": str(self.process.log_path),
        }


def _span(seconds: float) -> str:
    minutes = seconds / 60
    if minutes >= 1 and minutes == int(minutes):
        return f"{minutes:g} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} s"


def print_event(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class Supervisor:
    """Watches processes that are already running and ready, one thread each.

    Every exit that `stop()` did not ask for is a crash (so is a restart that never gets
    ready): the process is restarted after `policy.delay_s(crashes within the window)`, and
    the `policy.max_crashes`-th crash within `policy.window_s` gives it up, leaving the others
    running. `stop()` stops every process in reverse order of `adopt`.

    Each restart forks from its watcher thread, and Linux ties the parent-death signal to
    the forking thread; so a watcher stays alive until `stop()` has stopped every process.
    """

    def __init__(
        self,
        policy: RestartPolicy | None = None,
        *,
        on_event: Callable[[str], None] = print_event,
        on_change: Callable[[list[dict[str, object]]], None] | None = None,
    ) -> None:
        self.policy = policy or RestartPolicy()
        self.on_event = on_event
        self.on_change = on_change
        self.members: list[Supervised] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def adopt(self, process: ServiceProcess, address: str | None = None) -> Supervised:
        member = Supervised(process, address)
        self.members.append(member)
        if self._threads:  # watching already
            self._watch_member(member)
        return member

    def watch(self) -> None:
        """Start watching every adopted process."""
        for member in self.members:
            self._watch_member(member)
        self._changed()

    def snapshot(self) -> list[dict[str, object]]:
        now = time.time()
        with self._lock:
            return [member.describe(now) for member in self.members]

    def given_up(self) -> list[Supervised]:
        return [m for m in self.members if m.state == GIVEN_UP]

    def stop(self) -> None:
        """Stop watching, then stop every process (last adopted first)."""
        with self._lock:
            self._stopping.set()
        try:
            for member in reversed(self.members):
                member.process.stop()
                member.state = STOPPED
        finally:
            self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=15)

    # --- one watcher per process ---------------------------------------------------------
    def _watch_member(self, member: Supervised) -> None:
        thread = threading.Thread(target=self._watch, args=(member,), name=f"watch-{member.name}")
        thread.daemon = True
        self._threads.append(thread)
        thread.start()

    def _watch(self, member: Supervised) -> None:
        try:
            while not self._stopping.is_set():
                popen = member.process.popen
                if popen is None:
                    return
                try:
                    code = popen.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    continue
                if self._stopping.is_set():
                    break
                delay = self._crashed(member, code)
                if delay is None or self._stopping.wait(delay):
                    break
                self._restart(member)
        finally:
            # keep the forking thread alive until tear-down (see the class docstring)
            self._stopped.wait()

    def _crashed(self, member: Supervised, code: int) -> float | None:
        """Record an exit; the seconds to wait before restarting, or None when giving up."""
        log = member.process.log_path
        # a dead leader may leave children in its group (gunicorn's worker holds the port)
        signal_group(member.process.popen.pid, signal.SIGKILL)
        now = time.monotonic()
        with self._lock:
            member.crashes.append(now)
            while member.crashes and member.crashes[0] < now - self.policy.window_s:
                member.crashes.popleft()
            crashes = len(member.crashes)
            member.last_exit = describe_exit(code)
            member.state = GIVEN_UP if crashes >= self.policy.max_crashes else RESTARTING
        window = _span(self.policy.window_s)
        if member.state == GIVEN_UP:
            self.on_event(
                f"{member.name} exited ({member.last_exit}); it crashed {crashes} times within "
                f"{window}, so it is given up (the rest keep running). Log: {log}"
            )
            self._changed()
            return None
        delay = self.policy.delay_s(crashes)
        self.on_event(
            f"{member.name} exited ({member.last_exit}); restarting in {delay:g} s "
            f"(crash {crashes}; crash {self.policy.max_crashes} within {window} gives it up). "
            f"Log: {log}"
        )
        self._changed()
        return delay

    def _restart(self, member: Supervised) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            try:
                member.process.start()
            except ServiceError as exc:  # cannot even exec: nothing will change by retrying
                member.state = GIVEN_UP
                member.last_exit = str(exc)
                self.on_event(f"{member.name} cannot be restarted: {exc}; it is given up")
                return
            member.restarts += 1
        self.on_event(
            f"{member.name} started (pid {member.process.pid}, restart {member.restarts}). "
            f"Log: {member.process.log_path}"
        )
        self._changed()
        try:
            member.process.wait_ready()
        except ServiceError:
            return  # it exited or was stopped: the watch loop sees the exit and counts it
        with self._lock:
            if not self._stopping.is_set():
                member.state = RUNNING
        self.on_event(f"{member.name} is ready again (pid {member.process.pid})")
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None and not self._stopping.is_set():
            with contextlib.suppress(OSError):
                self.on_change(self.snapshot())


def write_state_file(path: Path, state: dict[str, object]) -> None:
    """Replace `path` atomically, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)
