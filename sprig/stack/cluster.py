"""Sprig's own processes (controller, minion, servers, brokers) as managed children,
started through the same CLI verbs that docker-compose.yml uses."""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

from sprig.stack.process import ServiceProcess


def _http_ok(url: str, expect: bytes | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        body = response.read()
        return response.status == 200 and (expect is None or body.strip() == expect)


def sprig_argv(*verb: str) -> list[str]:
    return [sys.executable, "-m", "sprig", *verb]


def controller_process(workdir: Path, port: int, env: dict[str, str]) -> ServiceProcess:
    """The controller on `port`; ready when GET /health answers OK."""
    return ServiceProcess(
        "controller",
        sprig_argv("controller", "--port", str(port)),
        log_path=workdir / "controller" / "controller.log",
        ready=lambda: _http_ok(f"http://127.0.0.1:{port}/health", b"OK"),
        timeout_s=90,
        env={**env, "SPRIG_CONTROLLER_PORT": str(port)},
    )


def minion_process(
    workdir: Path, env: dict[str, str], name: str = "minion", tags: str = "minion_untagged"
) -> ServiceProcess:
    """A minion (Celery worker) on the queues of `tags`; ready when it answers a ping task."""
    from sprig.stack.probes import minion_answers

    return ServiceProcess(
        name,
        sprig_argv("minion", "--tags", tags, "--name", name),
        log_path=workdir / name / f"{name}.log",
        ready=lambda: minion_answers(env["SPRIG_REDIS_URL"], tags.split(",")[0]),
        timeout_s=90,
        env=env,
    )


def server_process(
    workdir: Path,
    query_port: int,
    admin_port: int,
    env: dict[str, str],
    *,
    host: str = "127.0.0.1",
    name: str | None = None,
) -> ServiceProcess:
    """A server (`sprig server`); ready when its admin /health answers OK (registered and
    following the ideal states)."""
    name = name or f"server_{query_port}"
    argv = sprig_argv("server", "--host", host, "--bind", host, "--query-port", str(query_port))
    argv += ["--admin-port", str(admin_port)]
    return ServiceProcess(
        name,
        argv,
        log_path=workdir / name / f"{name}.log",
        ready=lambda: _http_ok(f"http://127.0.0.1:{admin_port}/health", b"OK"),
        timeout_s=60,
        env=env,
    )


def broker_process(
    workdir: Path, port: int, env: dict[str, str], *, host: str = "127.0.0.1", name: str = "broker"
) -> ServiceProcess:
    """A broker (`sprig broker`); ready when /health answers OK (registered, routing built)."""
    return ServiceProcess(
        name,
        sprig_argv("broker", "--host", host, "--bind", host, "--port", str(port)),
        log_path=workdir / name / f"{name}.log",
        ready=lambda: _http_ok(f"http://127.0.0.1:{port}/health", b"OK"),
        timeout_s=60,
        env=env,
    )
