"""Sprig's own processes (controller, minion; brokers and servers later) as managed children,
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
