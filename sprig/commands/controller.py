"""`sprig controller`: the controller process (Django on gunicorn) on port 9000."""

from __future__ import annotations

import argparse
import os
import sys

from sprig.stack.process import choose_port


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "controller",
        help="run the controller: REST API and console (Django on gunicorn)",
        description="Run the controller. It applies database migrations, then serves the "
        "Pinot-compatible REST API and the web console. Configuration comes from the SPRIG_* "
        "environment variables (see the README).",
    )
    parser.add_argument("--host", default=os.environ.get("SPRIG_CONTROLLER_BIND", "0.0.0.0"))
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("SPRIG_CONTROLLER_PORT", "9000")),
        help="HTTP port (default: $SPRIG_CONTROLLER_PORT or 9000); a port in use is an error",
    )
    parser.add_argument(
        "--settings", default=os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local")
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    choose_port("controller", args.port, strict=True, host=args.host)
    os.environ["DJANGO_SETTINGS_MODULE"] = args.settings
    os.environ["SPRIG_CONTROLLER_PORT"] = str(args.port)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    argv = [
        sys.executable, "-m", "gunicorn",
        "--config", "python:config.gunicorn",
        "--bind", f"{args.host}:{args.port}",
        "config.wsgi:application",
    ]  # fmt: skip
    os.execv(sys.executable, argv)
    return 0  # not reached
