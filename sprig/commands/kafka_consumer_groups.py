"""`sprig kafka-consumer-groups`: list and describe consumer groups with the options and the
output of Kafka's kafka-consumer-groups.sh, plus `--sum` for a group's total lag."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ACTIONS = ("list", "describe")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "kafka-consumer-groups",
        help="list and describe Kafka consumer groups and their lag (kafka-consumer-groups.sh)",
        description="List consumer groups, or describe their committed offsets, log-end offsets "
        "and lag, members or state, with the output of Kafka's kafka-consumer-groups.sh. Lag is "
        "log-end offset minus committed offset, '-' when the group has no commit there.",
    )
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="REQUIRED: the Kafka server(s) to connect to",
    )
    parser.add_argument("--list", action="store_true", help="list all consumer groups")
    parser.add_argument(
        "--describe", action="store_true", help="describe consumer groups and their offset lag"
    )
    parser.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help="a consumer group to describe (repeatable)",
    )
    parser.add_argument("--all-groups", action="store_true", help="describe every group")
    parser.add_argument(
        "--offsets",
        action="store_true",
        help="with --describe: partitions with offsets and lag (the default)",
    )
    parser.add_argument("--members", action="store_true", help="with --describe: the members")
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="STATES",
        help="with --describe: the group state; with --list: show states, "
        "optionally only these (e.g. stable,empty)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="with --describe: more columns (leader epoch, assignments, epochs)",
    )
    parser.add_argument(
        "--sum", action="store_true", help="with --describe: one row per group with its total lag"
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=5000,
        metavar="MS",
        help="timeout of each admin request in ms (default 5000)",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="a properties file of client settings (security, for example)",
    )
    parser.set_defaults(func=run, _parser=parser)


def run(args: argparse.Namespace) -> int:
    _check(args, args._parser)
    from monitoring import cgc_format
    from monitoring.errors import GroupStateError, KafkaUnavailableError
    from monitoring.kafka_admin import KafkaGroupReader
    from sprig.errors import CommandError

    out, err = sys.stdout, sys.stderr
    # librdkafka's own connection-error lines would bury the one clear error this prints.
    config = {"log_level": 2, **_properties(args.command_config)}
    reader = KafkaGroupReader(args.bootstrap_server, args.timeout / 1000, config)
    try:
        if args.list:
            _list(reader, args, out)
            return 0
        group_ids = _group_ids(reader, args)
        if args.members or args.state is not None:
            descriptions = reader.describe(group_ids)
            ordered = [descriptions[k] for k in sorted(descriptions)]
            printer = cgc_format.print_members if args.members else cgc_format.print_states
        else:
            ordered = reader.group_offsets(group_ids)
            printer = cgc_format.print_lag_sums if args.sum else cgc_format.print_offsets
        missing = cgc_format.not_found_error([getattr(x, "description", x) for x in ordered])
        if missing:
            out.write(missing)
            return 1
        if args.sum:
            printer(ordered, out, err)
        else:
            printer(ordered, out, err, args.verbose)
        return 0
    except KafkaUnavailableError as exc:
        raise CommandError(str(exc)) from exc
    except GroupStateError as exc:
        out.write(f"\nError: Executing consumer group command failed due to {exc}\n")
        return 1


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The Kafka tool's option rules; a violation is a usage error (exit 2)."""
    from monitoring.groups import parse_state_filter

    if sum((args.list, args.describe)) != 1:
        parser.error("Command must include exactly one action: --list, --describe")
    if args.describe:
        if not args.group and not args.all_groups:
            parser.error("Option --describe takes one of these options: --all-groups, --group")
        if sum((args.members, args.offsets, args.state is not None)) > 1:
            parser.error(
                "Option --describe takes at most one of these options: "
                "--members, --offsets, --state"
            )
        if args.state:
            parser.error("Option --describe does not take a value for --state")
        if args.sum and (args.members or args.state is not None):
            parser.error("Option --sum goes with --offsets only")
    else:
        for flag in ("members", "offsets", "sum", "verbose"):
            if getattr(args, flag):
                parser.error(f"Option --{flag} may be used with --describe only")
        if args.state:
            try:
                args.state_filter = parse_state_filter(args.state)
            except ValueError as exc:
                parser.error(str(exc))
    if args.timeout <= 0:
        parser.error(f"--timeout must be a positive number of milliseconds, got {args.timeout}")


def _list(reader, args: argparse.Namespace, out) -> None:
    from monitoring import cgc_format

    listings = reader.list_groups()
    if args.state is None:
        cgc_format.print_group_ids(listings, out)
        return
    wanted = getattr(args, "state_filter", None)
    if wanted:
        listings = [x for x in listings if x.state in wanted]
    cgc_format.print_group_states(listings, out)


def _group_ids(reader, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [listing.group_id for listing in reader.list_groups()]
    return list(dict.fromkeys(args.group))


def _properties(path: Path | None) -> dict[str, str]:
    """The Kafka tool's --command-config: a Java properties file, read as every other
    properties file here is (engine.runtime.properties)."""
    from engine.common.errors import ConfigError
    from engine.runtime.properties import PinotProperties
    from sprig.errors import CommandError

    try:
        return dict(PinotProperties.load(path))
    except ConfigError as exc:
        raise CommandError(f"--command-config: {exc.message}") from exc
