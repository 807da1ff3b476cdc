"""`sprig`: the command line. Each verb lives in `sprig/commands/<verb>.py` and exposes
`register(subparsers)`, which adds its parser and sets `func(args) -> int`."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import sprig.commands
from sprig.errors import CommandError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sprig",
        description="Sprig: a real-time analytics cluster that follows the Apache Pinot design.",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for module_info in sorted(pkgutil.iter_modules(sprig.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"sprig.commands.{module_info.name}")
        module.register(subparsers)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    passthrough = getattr(args, "passthrough", None)
    if extra and passthrough is None:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if passthrough is not None:  # a verb that hands its other arguments on, in their order
        setattr(args, passthrough, extra)
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except CommandError as exc:
        print(f"sprig {args.verb}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
