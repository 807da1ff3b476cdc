"""One child process of a service: started in its own session, logged to a file,
health-checked, and stopped with its whole process group."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


class ServiceError(RuntimeError):
    """A service did not start, did not become ready, or cannot use the port it was given."""


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM it when the parent dies, even by SIGKILL."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: the parent's own tear-down still stops the child
        pass


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port that nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


# Ports this process has chosen for its children. A child binds its port only once it runs,
# so without this list the broker and a server started together could both be handed the
# same free port when their preferred ones are taken.
_promised: set[int] = set()


def choose_port(
    name: str, preferred: int | None, *, strict: bool = False, host: str = "127.0.0.1"
) -> int:
    """The preferred port when it is free; otherwise the next free one above it. A port
    chosen earlier by this process does not count as free.

    With `strict` (the user named the port explicitly) a port in use is an error that names it.
    """
    if preferred is None:
        return _promise(free_port(host))
    if preferred not in _promised and port_is_free(preferred, host):
        return _promise(preferred)
    if strict:
        raise ServiceError(
            f"{name}: port {preferred} is already in use; stop whatever listens there or choose another port"
        )
    for candidate in range(preferred + 1, min(preferred + 200, 65535)):
        if candidate not in _promised and port_is_free(candidate, host):
            return _promise(candidate)
    return _promise(free_port(host))


def _promise(port: int) -> int:
    _promised.add(port)
    return port


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


class ServiceProcess:
    """A long-running child process with a readiness probe.

    The child gets its own session (so a terminal's Ctrl-C reaches only the parent, which then
    stops it in order) and a parent-death signal (so a killed parent leaves no orphan).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        ready: Callable[[], bool],
        timeout_s: float = 60.0,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.ready = ready
        self.timeout_s = timeout_s
        self.env = env
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None  # wall clock (time.time()) of the last start

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns the descriptor
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(self.env or {})},
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except FileNotFoundError as exc:
            raise ServiceError(f"{self.name}: cannot run {self.argv[0]!r}: {exc.strerror}") from exc
        finally:
            log.close()
        self.started_at = time.time()

    def wait_ready(self) -> None:
        assert self.popen is not None, "start() first"
        deadline = time.monotonic() + self.timeout_s
        while True:
            code = self.popen.poll()
            if code is not None:
                raise ServiceError(
                    f"{self.name} exited with code {code} before it was ready. "
                    f"Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                if self.ready():
                    return
            except Exception:  # a probe that raises just means "not yet"
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ServiceError(
                    f"{self.name} did not come up within {self.timeout_s:.0f}s. "
                    f"Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(0.2)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after `timeout_s` seconds."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            signal_group(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                signal_group(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        # children the service itself forked may outlive the leader
        signal_group(self.popen.pid, signal.SIGKILL)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to every process of the group `pgid`; a group that is gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
