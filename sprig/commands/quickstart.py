"""`sprig quickstart`: the whole local cluster in one command, stopped by Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
from pathlib import Path

from sprig.errors import CommandError
from sprig.runtime import AlreadyRunning, SingleInstanceLock, wait_for_stop_signal
from sprig.stack import LocalStack, ServiceError, ServiceProcess, check_java
from sprig.stack.cluster import controller_process, minion_process
from sprig.stack.process import choose_port

DEFAULT_CONTROLLER_PORT = 9000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "quickstart",
        help="start a local cluster with the console; Ctrl-C stops everything",
        description="Start ZooKeeper, Redis and a Kafka-protocol broker, then the controller "
        "(REST API and console) and a minion. Services whose SPRIG_ZK / SPRIG_REDIS_URL / "
        "SPRIG_KAFKA_BROKERS variable is set are used as external services instead of started. "
        "Ctrl-C stops every process it started.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"controller port (default {DEFAULT_CONTROLLER_PORT}, or the next free one if it is taken; "
        "a port given here must be free)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the controller database, deep store and logs go (default: a new temp dir)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        check_java()
    except ServiceError as exc:
        raise CommandError(str(exc)) from None
    lock = SingleInstanceLock("quickstart")
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        url = exc.holder.get("console")
        hint = f"; its console is at {url}" if url else ""
        raise CommandError(f"{exc}{hint}. Stop it with Ctrl-C in its terminal first.") from None

    data_dir = (args.data_dir or Path(tempfile.mkdtemp(prefix="sprig-quickstart-"))).resolve()
    workdir = data_dir / "processes"
    stack = LocalStack(data_dir / "stack", honour_external=True)
    children: list[ServiceProcess] = []
    try:
        port = _controller_port(args.port)
        print(f"Starting the service stack in {data_dir} ...", flush=True)
        stack.start()
        env = {
            **stack.env(),
            "SPRIG_DATA_DIR": str(data_dir / "controller"),
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "config.settings.local"
            ),
        }
        print("Starting the controller and a minion ...", flush=True)
        children = [controller_process(workdir, port, env), minion_process(workdir, env)]
        for child in children:
            child.start()
        for child in children:
            child.wait_ready()
        console = f"http://localhost:{port}"
        lock.update(console=console, data_dir=str(data_dir))
        _print_summary(console, stack, children, data_dir)
        why = wait_for_stop_signal(lambda: _dead_child(children))
        print(f"\nStopping ({why}) ...", flush=True)
    except ServiceError as exc:
        raise CommandError(str(exc)) from None
    finally:
        # a second Ctrl-C must not cut the tear-down short and leave children behind
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for child in reversed(children):
            child.stop()
        stack.stop()
        lock.release()
    print("Everything is stopped.")
    return 0


def _controller_port(requested: int | None) -> int:
    if requested is not None:
        return choose_port("controller", requested, strict=True, host="0.0.0.0")
    port = choose_port("controller", DEFAULT_CONTROLLER_PORT, host="0.0.0.0")
    if port != DEFAULT_CONTROLLER_PORT:
        print(
            f"Port {DEFAULT_CONTROLLER_PORT} is in use; the controller takes port {port} instead.",
            flush=True,
        )
    return port


def _dead_child(children: list[ServiceProcess]) -> str | None:
    for child in children:
        if not child.alive():
            return f"{child.name} exited; see {child.log_path}"
    return None


def _print_summary(
    console: str, stack: LocalStack, children: list[ServiceProcess], data_dir: Path
) -> None:
    print()
    print(f"Sprig is running. Console: {console}   REST API: {console}/help")
    print()
    print(f"  {'process':<11} {'address':<32} {'pid':<8} log")
    for row in stack.describe():
        print(
            f"  {row['service']:<11} {row['address']!s:<32} {row['pid'] or '-'!s:<8} {row['log'] or '-'}"
        )
    for child in children:
        address = console if child.name == "controller" else "queue:minion_untagged"
        print(f"  {child.name:<11} {address:<32} {child.pid!s:<8} {child.log_path}")
    print()
    print(f"Data: {data_dir}")
    print("Press Ctrl-C to stop everything.", flush=True)
