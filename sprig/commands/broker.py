"""`sprig broker`: a broker process (routes queries to servers and reduces their results)."""

from __future__ import annotations

import argparse
import os

from sprig.engine_process import add_instance_arguments, cluster_settings, prepare_process, serve
from sprig.errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a broker: answers SQL on POST /query/sql by querying the servers",
        description="Run a broker. It registers as Broker_<host>_<port> in the cluster at "
        "$SPRIG_ZK ($SPRIG_CLUSTER_NAME), builds its routing tables from ZooKeeper and serves "
        "Pinot's query API (POST /query/sql). Ctrl-C stops it.",
    )
    parser.add_argument("--port", type=int, default=8099, help="HTTP port (default 8099)")
    add_instance_arguments(parser, "clients", "Broker_<host>_<port>")
    parser.add_argument(
        "--config",
        default=os.environ.get("SPRIG_BROKER_CONFIG"),
        help="Pinot's broker config, a properties file of pinot.broker.* keys (query "
        "cancellation, query log, access control, TLS), read after the files of "
        "$SPRIG_PINOT_CONFIG; default $SPRIG_BROKER_CONFIG",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.broker import BrokerConfig, BrokerInstance
    from engine.common.errors import ConfigError
    from engine.runtime.http_limits import HttpLimits
    from engine.runtime.outbound import OutboundPolicy

    prepare_process()
    try:
        http = HttpLimits.from_env()  # read once: the broker keeps these until it stops
        outbound = OutboundPolicy.from_env()
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    config = BrokerConfig(
        host=args.host,
        port=args.port,
        bind=args.bind,
        instance_id=args.instance_id,
        http=http,
        outbound=outbound,
        **cluster_settings(args.config),
    )

    def build() -> BrokerInstance:
        try:
            return BrokerInstance(config)
        except ConfigError as exc:  # a malformed pinot.broker.* value
            raise CommandError(f"{config.properties.source}: {exc}") from exc

    return serve(
        build,
        lambda broker: f"Broker {broker.instance_id} is up on port {broker.port}",
    )
