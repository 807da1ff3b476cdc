"""`sprig server`: a server process (hosts segments, answers segment-level queries)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path

from sprig.errors import CommandError
from sprig.runtime import REPO_ROOT, wait_for_stop_signal


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "server",
        help="run a server: hosts segments and answers queries from brokers",
        description="Run a server. It registers as Server_<host>_<query port> in the cluster "
        "at $SPRIG_ZK ($SPRIG_CLUSTER_NAME), downloads and loads the segments the controller "
        "assigns to it, and answers the brokers' queries. Ctrl-C stops it.",
    )
    parser.add_argument("--query-port", type=int, default=8098, help="query port (default 8098)")
    parser.add_argument("--admin-port", type=int, default=8097, help="admin port (default 8097)")
    parser.add_argument(
        "--host",
        default=os.environ.get("SPRIG_INSTANCE_HOST") or socket.gethostname(),
        help="the host name brokers use to reach this server (default: $SPRIG_INSTANCE_HOST "
        "or this machine's host name)",
    )
    parser.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    parser.add_argument("--instance-id", default=None, help="default Server_<host>_<query port>")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where downloaded segments live, one directory per server: copies of segments "
        "not assigned to this server are deleted at start (default "
        "$SPRIG_DATA_DIR/servers/<instance id>)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.clusterstate import ZooKeeperUnavailableError
    from engine.server import ServerConfig, ServerError, ServerInstance

    _configure_logging()
    _tune_interpreter()
    config = ServerConfig(
        zk_address=os.environ.get("SPRIG_ZK", "127.0.0.1:2181"),
        cluster_name=os.environ.get("SPRIG_CLUSTER_NAME", "PinotCluster"),
        host=args.host,
        query_port=args.query_port,
        admin_port=args.admin_port,
        bind=args.bind,
        instance_id=args.instance_id,
        tenant_isolation=_env_bool("SPRIG_TENANT_ISOLATION", True),
        session_timeout_s=float(os.environ.get("SPRIG_ZK_SESSION_TIMEOUT_S", "10")),
    )
    data_root = Path(os.environ.get("SPRIG_DATA_DIR", REPO_ROOT / "var"))
    config.data_dir = args.data_dir or data_root / "servers" / config.resolved_instance_id
    try:
        server = ServerInstance(config)
    except ServerError as exc:
        raise CommandError(str(exc)) from None
    try:
        server.start()
    except ZooKeeperUnavailableError as exc:
        server.stop()
        raise CommandError(str(exc)) from None
    print(f"Server {server.instance_id} is up: queries on port {server.query_http.port}, "
          f"admin on port {server.admin_http.port}", flush=True)  # fmt: skip
    try:
        wait_for_stop_signal()
    finally:
        server.stop()
    return 0


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def _tune_interpreter() -> None:
    # Many threads wait on sockets here; a shorter GIL switch interval (CPython's default is
    # 5 ms) lets a thread whose answer arrived run sooner, which cuts tail latency under load.
    sys.setswitchinterval(float(os.environ.get("SPRIG_GIL_SWITCH_INTERVAL_S", "0.001")))


def _configure_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("SPRIG_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
