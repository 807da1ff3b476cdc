"""Where a local run keeps its state, and how a foreground run waits for Ctrl-C."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_dir() -> Path:
    """$SPRIG_RUN_DIR, or var/run in the checkout: lock files and the state of detached stacks."""
    path = Path(os.environ.get("SPRIG_RUN_DIR", REPO_ROOT / "var" / "run"))
    path.mkdir(parents=True, exist_ok=True)
    return path


class AlreadyRunning(RuntimeError):
    def __init__(self, what: str, holder: dict) -> None:
        self.holder = holder
        detail = ", ".join(f"{k} {v}" for k, v in holder.items()) or "details unknown"
        super().__init__(f"a {what} is already running ({detail})")


class SingleInstanceLock:
    """An flock on a file in the run dir, so a second quickstart says so instead of colliding.

    The lock dies with the process that holds it, so a crashed run never blocks the next one.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = run_dir() / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self, **info: object) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.read(fd, 65536) or b"{}")
            except ValueError:
                holder = {}
            os.close(fd)
            raise AlreadyRunning(self.name, holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), **info}).encode())
        self._fd = fd

    def update(self, **info: object) -> None:
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, json.dumps({"pid": os.getpid(), **info}).encode())

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self.path.unlink(missing_ok=True)


def wait_for_stop_signal(extra_check=None, poll_s: float = 1.0) -> str:
    """Block until SIGINT/SIGTERM (returns the signal's name), or until `extra_check()` returns
    a reason string (a child died, say)."""
    stop = threading.Event()
    reason: list[str] = []

    def handler(signum, frame):
        reason.append(signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(poll_s):
            if extra_check is not None:
                why = extra_check()
                if why:
                    return why
        return reason[0]
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
