"""`sprig broker`: a broker process (routes queries to servers and reduces their results)."""

from __future__ import annotations

import argparse
import os
import socket

from sprig.commands.server import _configure_logging, _env_bool, _tune_interpreter
from sprig.errors import CommandError
from sprig.runtime import wait_for_stop_signal


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a broker: answers SQL on POST /query/sql by querying the servers",
        description="Run a broker. It registers as Broker_<host>_<port> in the cluster at "
        "$SPRIG_ZK ($SPRIG_CLUSTER_NAME), builds its routing tables from ZooKeeper and serves "
        "Pinot's query API (POST /query/sql). Ctrl-C stops it.",
    )
    parser.add_argument("--port", type=int, default=8099, help="HTTP port (default 8099)")
    parser.add_argument(
        "--host",
        default=os.environ.get("SPRIG_INSTANCE_HOST") or socket.gethostname(),
        help="the host name clients use to reach this broker (default: $SPRIG_INSTANCE_HOST "
        "or this machine's host name)",
    )
    parser.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    parser.add_argument("--instance-id", default=None, help="default Broker_<host>_<port>")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.broker import BrokerConfig, BrokerInstance
    from engine.clusterstate import ZooKeeperUnavailableError
    from engine.server import ServerError

    _configure_logging()
    _tune_interpreter()
    config = BrokerConfig(
        zk_address=os.environ.get("SPRIG_ZK", "127.0.0.1:2181"),
        cluster_name=os.environ.get("SPRIG_CLUSTER_NAME", "PinotCluster"),
        host=args.host,
        port=args.port,
        bind=args.bind,
        instance_id=args.instance_id,
        tenant_isolation=_env_bool("SPRIG_TENANT_ISOLATION", True),
        session_timeout_s=float(os.environ.get("SPRIG_ZK_SESSION_TIMEOUT_S", "10")),
    )
    try:
        broker = BrokerInstance(config)
    except ServerError as exc:
        raise CommandError(str(exc)) from None
    try:
        broker.start()
    except ZooKeeperUnavailableError as exc:
        broker.stop()
        raise CommandError(str(exc)) from None
    print(f"Broker {broker.instance_id} is up on port {broker.port}", flush=True)
    try:
        wait_for_stop_signal()
    finally:
        broker.stop()
    return 0
