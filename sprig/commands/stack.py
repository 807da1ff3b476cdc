"""`sprig stack up|down|status`: the service stack (ZooKeeper, Redis, Kafka) alone, and the
status of every supervised process of a running stack or quickstart."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sprig.errors import CommandError
from sprig.runtime import AlreadyRunning, SingleInstanceLock, run_dir, wait_for_stop_signal
from sprig.stack import LocalStack, ServiceError
from sprig.stack.stack import ALL_SERVICES
from sprig.stack.supervisor import Supervisor


def state_path() -> Path:
    return run_dir() / "stack.json"


def quickstart_state_path() -> Path:
    """Written by a running quickstart's supervisor on every start, exit and give-up."""
    return run_dir() / "quickstart.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="start, stop or inspect the local service stack (ZooKeeper, Redis, Kafka)",
        description="Manage the local service stack alone: real ZooKeeper, Redis and "
        "Apache Kafka, each on a free port with its own temp dir and log file.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    up = actions.add_parser(
        "up",
        help="start the stack in the background and print its addresses",
        description="Start the stack. By default it runs in the background until `sprig stack down`; "
        "with --foreground it runs until Ctrl-C. A service that exits is restarted (1, 2, 4 ... "
        "30 s apart; given up after 5 crashes in 5 minutes).",
    )
    up.add_argument(
        "--foreground", action="store_true", help="stay attached; Ctrl-C stops the stack"
    )
    up.add_argument(
        "--services",
        default=",".join(ALL_SERVICES),
        help=f"comma-separated subset of {','.join(ALL_SERVICES)} (default: all)",
    )
    up.add_argument(
        "--workdir",
        type=Path,
        help="where the services keep data and logs (default: a new temp dir)",
    )
    up.set_defaults(func=cmd_up)

    down = actions.add_parser("down", help="stop a stack started with `sprig stack up`")
    down.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for it to stop")
    down.set_defaults(func=cmd_down)

    status = actions.add_parser(
        "status",
        help="list the processes of a running stack or quickstart: pid, state, restarts, "
        "uptime, log",
        description="List every process of a running `sprig stack up` or `sprig quickstart`: "
        "pid, state (running, restarting, given up), restarts, uptime and log file.",
    )
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    status.set_defaults(func=cmd_status)


def _services(value: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in value.split(",") if s.strip())
    unknown = [n for n in names if n not in ALL_SERVICES]
    if unknown or not names:
        raise CommandError(
            f"unknown service(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(ALL_SERVICES)}"
        )
    return names


def cmd_up(args: argparse.Namespace) -> int:
    services = _services(args.services)
    if not args.foreground:
        return _spawn_detached(args, services)
    lock = SingleInstanceLock("stack")
    try:
        lock.acquire(state=str(state_path()))
    except AlreadyRunning as exc:
        raise CommandError(f"{exc}; stop it with `sprig stack down`") from None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sprig-stack-"))
    stack = LocalStack(workdir, services)
    try:
        stack.start()
    except ServiceError as exc:
        lock.release()
        raise CommandError(str(exc)) from None
    info = {"pid": os.getpid(), "workdir": str(workdir), "started": time.time()}
    supervisor = Supervisor(
        on_change=lambda rows: stack.write_state(state_path(), **info, processes=rows)
    )
    try:
        for row in stack.describe():
            supervisor.adopt(stack.services[row["service"]].process, str(row["address"]))
        supervisor.watch()
        print_stack(stack.describe(), stack.env())
        print("\nThe stack runs until Ctrl-C; a service that exits is restarted.", flush=True)
        wait_for_stop_signal()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("Stopping the stack...", flush=True)
        supervisor.stop()
        state_path().unlink(missing_ok=True)
        lock.release()
    return 0


def _spawn_detached(args: argparse.Namespace, services: tuple[str, ...]) -> int:
    state = _read_state()
    if state and _pid_alive(state.get("pid")):
        raise CommandError(
            f"a stack is already running (pid {state['pid']}); stop it with `sprig stack down`"
        )
    log = run_dir() / "stack-supervisor.log"
    argv = [
        sys.executable,
        "-m",
        "sprig",
        "stack",
        "up",
        "--foreground",
        "--services",
        ",".join(services),
    ]
    if args.workdir:
        argv += ["--workdir", str(args.workdir)]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = _read_state()
        if state and state.get("pid") == proc.pid:
            print_stack(state["services"], state["env"])
            print("\nStop it with: sprig stack down")
            return 0
        if proc.poll() is not None:
            raise CommandError(f"the stack did not start; from {log}:\n{_tail(log)}")
        time.sleep(0.2)
    proc.terminate()
    raise CommandError(f"the stack did not become ready within 120s; see {log}")


def cmd_down(args: argparse.Namespace) -> int:
    state = _read_state()
    if not state or not _pid_alive(state.get("pid")):
        print("No stack is running.")
        state_path().unlink(missing_ok=True)
        return 0
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _pid_alive(pid):
        raise CommandError(
            f"the stack supervisor (pid {pid}) did not stop within {args.timeout:.0f}s"
        )
    print("The stack is stopped.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Exit 0 when a stack or a quickstart runs, 1 when neither does."""
    stack = _running(_read_state())
    quickstart = _running(_read_json(quickstart_state_path()))
    if args.json:
        processes = [
            {"owner": owner, **row}
            for owner, state in (("stack", stack), ("quickstart", quickstart))
            for row in (state or {}).get("processes") or []
        ]
        body = {"running": bool(stack or quickstart), "processes": processes,
                "stack": stack, "quickstart": quickstart}  # fmt: skip
        print(json.dumps(body, indent=2))
        return 0 if stack or quickstart else 1
    if not stack and not quickstart:
        print("No stack or quickstart is running. Start one with: sprig stack up")
        return 1
    if stack:
        print(f"The stack runs (supervisor pid {stack['pid']}, workdir {stack.get('workdir')}).")
        print_processes(stack.get("processes") or [])
        _print_env(stack["env"])
    if quickstart:
        if stack:
            print()
        print(f"A quickstart runs (pid {quickstart['pid']}, console {quickstart.get('console')}).")
        print_processes(quickstart.get("processes") or [])
    return 0


def _running(state: dict | None) -> dict | None:
    """The state of a supervisor that is still alive, with each process's uptime as of now."""
    if not state or not _pid_alive(state.get("pid")):
        return None
    now = time.time()
    for row in state.get("processes") or []:
        if row.get("uptime_s") is not None:
            row["uptime_s"] = round(now - row["started_at"], 1)
    return state


def print_processes(rows: list[dict]) -> None:
    print(f"  {'process':<11} {'pid':<8} {'state':<11} {'restarts':>8}  {'uptime':<9} log")
    for row in rows:
        uptime = _duration(row["uptime_s"]) if row.get("uptime_s") is not None else "-"
        print(
            f"  {row['name']:<11} {row.get('pid') or '-'!s:<8} {row['state']:<11} "
            f"{row['restarts']:>8}  {uptime:<9} {row['log']}"
        )
        if row["state"] != "running" and row.get("last_exit"):
            print(f"  {'':<11} last exit: {row['last_exit']}")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def print_stack(rows: list[dict], env: dict[str, str]) -> None:
    for row in rows:
        print(
            f"  {row['service']:<10} {row['address']:<32} pid {row.get('pid') or '-':<8} log {row.get('log') or '-'}"
        )
    _print_env(env)


def _print_env(env: dict[str, str]) -> None:
    print("\nPoint Sprig processes at it with:")
    for key, value in env.items():
        print(f"  export {key}={value}")


def _read_state() -> dict | None:
    return _read_json(state_path())


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
