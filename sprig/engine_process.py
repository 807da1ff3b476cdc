"""What `sprig server` and `sprig broker` share: the instance arguments, the settings read
from the environment, and starting, announcing and stopping the process."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys

from sprig.errors import CommandError
from sprig.runtime import wait_for_stop_signal


def add_instance_arguments(parser: argparse.ArgumentParser, role: str, default_id: str) -> None:
    """--host, --bind and --instance-id. ``role`` says who reaches the instance ("brokers"
    for a server, "clients" for a broker); ``default_id`` is the instance id's pattern."""
    parser.add_argument(
        "--host",
        default=os.environ.get("SPRIG_INSTANCE_HOST") or socket.gethostname(),
        help=f"the host name {role} use to reach this instance (default: $SPRIG_INSTANCE_HOST "
        "or this machine's host name)",
    )
    parser.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    parser.add_argument("--instance-id", default=None, help=f"default {default_id}")


def cluster_settings(config_file: str | None = None) -> dict:
    """The config fields every engine process takes from the environment, read once here:
    the SPRIG_* variables and Pinot's keys (``engine.runtime.properties``), with the
    process's own ``config_file`` (``--config``) over the files of SPRIG_PINOT_CONFIG."""
    from engine.common.errors import ConfigError
    from engine.runtime.properties import load_properties, process_properties

    try:
        properties = load_properties(files=[config_file]) if config_file else process_properties()
    except ConfigError as exc:
        raise CommandError(f"invalid config {exc.field}: {exc.message}") from None
    return {
        "properties": properties,
        "zk_address": os.environ.get("SPRIG_ZK", "127.0.0.1:2181"),
        "cluster_name": os.environ.get("SPRIG_CLUSTER_NAME", "PinotCluster"),
        "tenant_isolation": env_bool("SPRIG_TENANT_ISOLATION", True),
        "session_timeout_s": env_float("SPRIG_ZK_SESSION_TIMEOUT_S", 10.0),
    }


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        return float(value)
    except ValueError:
        raise CommandError(f"${name} must be a number, got {value!r}") from None


def prepare_process() -> None:
    """Logging, the allocator, and a GIL switch interval for many socket-waiting threads."""
    from engine.runtime.memory import tune_allocator

    # first, before any thread starts: a thread that has its own malloc arena keeps it
    tune_allocator()
    logging.basicConfig(
        level=os.environ.get("SPRIG_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    # Many threads wait on sockets here; a shorter GIL switch interval (CPython's default is
    # 5 ms) lets a thread whose answer arrived run sooner, which cuts tail latency under load.
    sys.setswitchinterval(env_float("SPRIG_GIL_SWITCH_INTERVAL_S", 0.001))
    # A query allocates thousands of short-lived containers: at CPython's default of 700 the
    # young generation is collected several times per query, and every tenth of those scans
    # the middle one too. Larger thresholds collect less often for the same garbage.
    gc.set_threshold(10_000, 20, 10)


def serve(build, announce) -> int:
    """Build the instance (``build()``: binding its ports may fail), start it (connecting to
    ZooKeeper may fail), print ``announce(instance)`` and run until Ctrl-C or SIGTERM."""
    from engine.clusterstate import ZooKeeperUnavailableError
    from engine.common.errors import ConfigError
    from engine.runtime import ProcessError

    try:
        instance = build()
    except ProcessError as exc:
        raise CommandError(str(exc)) from None
    except ConfigError as exc:  # a Pinot key (access control, TLS) that cannot be used
        raise CommandError(f"invalid config {exc.field}: {exc.message}") from None
    try:
        instance.start()
    except ZooKeeperUnavailableError as exc:
        instance.stop()
        raise CommandError(str(exc)) from None
    # What is alive now (modules, ZooKeeper state, the instance) lives as long as the process:
    # frozen, a full collection no longer walks it. Walking it took ~40 ms of CPU per full
    # collection, with every thread stopped: one cause of the query latency tail.
    gc.collect()
    gc.freeze()
    print(announce(instance), flush=True)
    try:
        wait_for_stop_signal()
    finally:
        instance.stop()
    return 0
