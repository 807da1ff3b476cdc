"""`sprig server` and `sprig broker` share their arguments and start-up: bad settings and a
port in use are one clear line and exit code 2, before anything is registered."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sprig(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sprig", *args], cwd=REPO, env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("verb", ["server", "broker"])
def test_both_take_the_shared_instance_arguments(verb):
    out = sprig(verb, "--help").stdout
    for flag in ("--host", "--bind", "--instance-id"):
        assert flag in out


def test_a_port_in_use_is_one_line_naming_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = sprig("broker", "--port", str(port), "--bind", "127.0.0.1")
    assert done.returncode == 2
    assert f"sprig broker: cannot listen on 127.0.0.1:{port} for the broker endpoint" in done.stderr


@pytest.mark.parametrize(
    ("verb", "env", "named"),
    [
        ("server", {"SPRIG_QUERY_THREADS": "many"}, "SPRIG_QUERY_THREADS"),
        ("server", {"SPRIG_QUERY_CACHE_BYTES": "-5"}, "SPRIG_QUERY_CACHE_BYTES"),
        ("broker", {"SPRIG_ZK_SESSION_TIMEOUT_S": "ten"}, "SPRIG_ZK_SESSION_TIMEOUT_S"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_variable(verb, env, named):
    done = sprig(verb, env=env)  # refused before any port is bound or ZooKeeper is asked
    assert done.returncode == 2
    assert done.stderr.startswith(f"sprig {verb}: ") and named in done.stderr
