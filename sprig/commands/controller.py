"""`sprig controller`: the controller process (Django on gunicorn) on port 9000."""

from __future__ import annotations

import argparse
import os
import sys

from sprig.errors import CommandError
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


def _tls_arguments(served) -> list[str]:
    """gunicorn's TLS options for the https listeners (``controller.tls.*``): the keystore as
    owner-only PEM files in the controller's data dir; a worker that wraps only the https
    listeners' connections when plain ones are served too."""
    from django.conf import settings

    from engine.common.errors import ConfigError
    from engine.runtime.properties import process_properties
    from engine.runtime.tls import HTTPS, TlsConfig

    tls_ports = [str(listener.port) for listener in served if listener.protocol == HTTPS]
    if not tls_ports:
        return []
    directory = settings.DATA_DIR / "tls" / "controller"
    try:
        tls = TlsConfig.from_properties(process_properties(), "controller.tls")
        cert, key = tls.pem_files(directory)
        ca = tls.ca_file(directory) if tls.client_auth else None
        if tls.client_auth and ca is None:
            raise ConfigError("controller.tls.truststore.path",
                              "client.auth.enabled needs a truststore")  # fmt: skip
    except ConfigError as exc:
        raise CommandError(f"invalid config {exc.field}: {exc.message}") from None
    out = ["--certfile", str(cert), "--keyfile", str(key)]
    if ca is not None:
        out += ["--ca-certs", str(ca), "--cert-reqs", "2"]  # ssl.CERT_REQUIRED
    if len(tls_ports) < len(served):
        os.environ["SPRIG_CONTROLLER_TLS_PORTS"] = ",".join(tls_ports)
        out += ["--worker-class", "config.gunicorn_worker.ListenerTlsWorker"]
    return out


def run(args: argparse.Namespace) -> int:
    from engine.common.errors import ConfigError
    from engine.runtime.properties import process_properties
    from engine.runtime.tls import listeners

    try:  # Pinot's controller.access.protocols: http on --port unless it says otherwise
        served = listeners(process_properties(), "controller", args.port)
    except ConfigError as exc:
        raise CommandError(f"invalid config {exc.field}: {exc.message}") from None
    for listener in served:
        choose_port(f"controller ({listener.protocol})", listener.port, strict=True,
                    host=listener.host or args.host)  # fmt: skip
    os.environ["DJANGO_SETTINGS_MODULE"] = args.settings
    # the first listener is the one the cluster's own processes call (config.settings)
    os.environ["SPRIG_CONTROLLER_PORT"] = str(served[0].port)
    os.environ["SPRIG_CONTROLLER_PROTOCOL"] = served[0].protocol
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    binds = [arg for listener in served for arg in ("--bind", f"{listener.host or args.host}"
                                                    f":{listener.port}")]  # fmt: skip
    argv = [
        sys.executable, "-m", "gunicorn",
        "--config", "python:config.gunicorn",
        *binds, *_tls_arguments(served),
        "config.wsgi:application",
    ]  # fmt: skip
    os.execv(sys.executable, argv)
    return 0  # not reached
