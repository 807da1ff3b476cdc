"""`sprig server`: a server process (hosts segments, answers segment-level queries)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sprig.engine_process import add_instance_arguments, cluster_settings, prepare_process, serve
from sprig.errors import CommandError
from sprig.runtime import REPO_ROOT


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
    add_instance_arguments(parser, "brokers", "Server_<host>_<query port>")
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
    from engine.common.errors import ConfigError
    from engine.query.settings import QuerySettings
    from engine.runtime.http_limits import HttpLimits
    from engine.server import ServerConfig, ServerInstance
    from engine.server.download import max_unpacked_bytes_from_env
    from engine.server.drain import drain_seconds_from_env

    prepare_process()
    try:
        query = QuerySettings.from_env()  # read once: the server keeps these until it stops
        drop_drain_s = drain_seconds_from_env()
        max_unpacked_bytes = max_unpacked_bytes_from_env()
        http = HttpLimits.from_env()
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    config = ServerConfig(
        host=args.host,
        query_port=args.query_port,
        admin_port=args.admin_port,
        bind=args.bind,
        instance_id=args.instance_id,
        query=query,
        drop_drain_s=drop_drain_s,
        max_unpacked_bytes=max_unpacked_bytes,
        http=http,
        **cluster_settings(),
    )
    data_root = Path(os.environ.get("SPRIG_DATA_DIR", REPO_ROOT / "var"))
    config.data_dir = args.data_dir or data_root / "servers" / config.resolved_instance_id
    return serve(
        lambda: ServerInstance(config),
        lambda server: (
            f"Server {server.instance_id} is up: queries on port "
            f"{server.query_http.port}, admin on port {server.admin_http.port}"
        ),
    )
