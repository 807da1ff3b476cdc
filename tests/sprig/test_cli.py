"""The command line: every verb documents itself; the quickstart and the stack start real
processes and leave none behind."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sprig.cli import build_parser, parse
from sprig.stack.process import free_port

REPO = Path(__file__).resolve().parents[2]
VERBS = ["controller", "minion", "quickstart", "stack", "test"]


def sprig(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sprig", *args], cwd=REPO, env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw,
    )  # fmt: skip


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help(verb):
    result = sprig(verb, "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: sprig {verb}" in result.stdout


@pytest.mark.parametrize("action", ["up", "down", "status"])
def test_every_stack_action_has_help(action):
    result = sprig("stack", action, "--help")
    assert result.returncode == 0
    assert f"usage: sprig stack {action}" in result.stdout


def test_the_parser_knows_every_verb():
    choices = build_parser()._subparsers._group_actions[0].choices
    assert set(VERBS) <= set(choices)


@pytest.mark.parametrize(
    ("argv", "no_lint", "pytest_args"),
    [
        (["test", "-m", "not slow"], False, ["-m", "not slow"]),
        (["test", "--no-lint", "--durations=0", "tests/engine", "-x"], True,
         ["--durations=0", "tests/engine", "-x"]),
        (["test", "tests/x.py", "--no-lint", "-k", "a or b"], True, ["tests/x.py", "-k", "a or b"]),
        (["test"], False, []),
    ],
)  # fmt: skip
def test_sprig_test_hands_every_other_argument_to_pytest_in_order(argv, no_lint, pytest_args):
    args = parse(build_parser(), argv)
    assert (args.no_lint, args.pytest_args) == (no_lint, pytest_args)


def test_other_verbs_still_refuse_unknown_arguments(capsys):
    with pytest.raises(SystemExit) as info:
        parse(build_parser(), ["stack", "status", "--bogus"])
    assert info.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_unknown_stack_service_is_a_clear_error(tmp_path):
    result = sprig(
        "stack",
        "up",
        "--foreground",
        "--services",
        "zookeeper,cassandra",
        env={"SPRIG_RUN_DIR": str(tmp_path)},
    )
    assert result.returncode == 2
    assert "unknown service(s) cassandra" in result.stderr


def test_bin_sprig_without_java_says_how_to_install_it(tmp_path):
    # a PATH with python3 and the coreutils the script needs, but no java
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("python3", "dirname", "sed", "head", "cat", "sha256sum", "cut"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    result = subprocess.run(
        ["/bin/bash", str(REPO / "bin" / "sprig"), "quickstart"],
        env={"PATH": str(bindir), "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 3
    assert "Java 17 or newer is required" in result.stderr
    assert "apt-get install openjdk-17-jre-headless" in result.stderr
    assert "Traceback" not in result.stderr


def test_bin_sprig_without_maven_says_how_to_install_it(tmp_path):
    # java is there, mvn is not: Kafka's jars cannot be fetched
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("python3", "dirname", "sed", "head", "cat", "sha256sum", "cut", "java"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    result = subprocess.run(
        ["/bin/bash", str(REPO / "bin" / "sprig"), "quickstart"],
        env={"PATH": str(bindir), "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 3
    assert "Maven ('mvn') is required to fetch Apache Kafka's jars" in result.stderr
    assert "apt-get install maven" in result.stderr


@pytest.mark.integration
@pytest.mark.slow
def test_stack_up_status_down_leaves_no_process(tmp_path):
    env = {"SPRIG_RUN_DIR": str(tmp_path / "run")}
    up = sprig("stack", "up", "--workdir", str(tmp_path / "stack"), env=env)
    assert up.returncode == 0, up.stderr
    pids = [int(p) for p in re.findall(r"pid (\d+)", up.stdout)]
    assert len(pids) == 3
    assert "export SPRIG_ZK=127.0.0.1:" in up.stdout

    again = sprig("stack", "up", env=env)
    assert again.returncode == 2 and "already running" in again.stderr

    status = sprig("stack", "status", env=env)
    assert status.returncode == 0 and status.stdout.count(" running ") == 3, status.stdout

    # a service that dies is restarted by the stack's supervisor, and status says so
    redis_pid = pids[1]
    os.kill(redis_pid, signal.SIGKILL)
    _wait_for(lambda: _redis_row(env)["state"] == "running" and _redis_row(env)["restarts"] == 1,
              30, lambda: str(_redis_row(env)))  # fmt: skip
    row = _redis_row(env)
    assert row["pid"] != redis_pid and row["last_exit"] == "killed by SIGKILL"
    assert row["log"].endswith("redis.log") and row["uptime_s"] >= 0
    pids.append(row["pid"])

    down = sprig("stack", "down", env=env)
    assert down.returncode == 0, down.stderr
    _assert_all_gone(pids)
    assert sprig("stack", "status", env=env).returncode == 1


def _redis_row(env: dict) -> dict:
    import json

    status = json.loads(sprig("stack", "status", "--json", env=env).stdout)
    assert status["running"] and status["quickstart"] is None
    return next(row for row in status["processes"] if row["name"] == "redis")


@pytest.mark.integration
@pytest.mark.slow
def test_quickstart_serves_health_and_ctrl_c_stops_everything(tmp_path):
    """The cluster processes without the example data (tests/cluster_e2e covers loading it)."""
    port = free_port()
    env = {**os.environ, "SPRIG_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    # pytest-django's in-memory test settings must not leak into the controller
    for var in ("SPRIG_ZK", "SPRIG_REDIS_URL", "SPRIG_KAFKA_BROKERS", "DJANGO_SETTINGS_MODULE"):
        env.pop(var, None)
    log = tmp_path / "quickstart.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sprig", "quickstart", "--no-data", "--port", str(port),
             "--data-dir", str(tmp_path / "data")],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        _wait_for(lambda: "Press Ctrl-C" in log.read_text(), 180, lambda: log.read_text())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            assert response.read() == b"OK"
        text = log.read_text()
        rows = re.findall(r"^  (\S+) .* (\d+)\s+/\S+\.log$", text, re.M)
        names = sorted(name for name, _ in rows)
        assert names == sorted(
            [
                "zookeeper",
                "redis",
                "kafka",
                "controller",
                "broker",
                "server-1",
                "server-2",
                "minion",
            ]
        ), text
        pids = [int(pid) for _, pid in rows]

        second = sprig("quickstart", env={"SPRIG_RUN_DIR": str(tmp_path / "run")})
        assert second.returncode == 2
        assert "a quickstart is already running" in second.stderr
        assert f"http://localhost:{port}" in second.stderr

        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert "Everything is stopped." in log.read_text()
        _assert_all_gone(pids)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.integration
def test_quickstart_refuses_an_explicit_port_in_use(tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = sprig("quickstart", "--port", str(port), env={"SPRIG_RUN_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert f"port {port} is already in use" in result.stderr


def _wait_for(predicate, timeout_s: float, describe) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out; output so far:\n{describe()}")


def _assert_all_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 20
    alive = pids
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive:
            return
        time.sleep(0.2)
    pytest.fail(f"processes still running: {alive}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.integration
@pytest.mark.slow
def test_killing_the_parent_leaves_no_orphans(tmp_path):
    """SIGKILL gives the parent no chance to clean up; the children's parent-death signal does."""
    env = {**os.environ, "SPRIG_RUN_DIR": str(tmp_path / "run")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sprig", "stack", "up", "--foreground", "--workdir", str(tmp_path / "s")],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    state = tmp_path / "run" / "stack.json"
    _wait_for(state.exists, 120, lambda: "no state file")
    import json

    pids = [row["pid"] for row in json.loads(state.read_text())["services"]]
    assert len(pids) == 3 and all(_alive(pid) for pid in pids)
    # a restarted service is forked by a supervisor thread: it must die with the parent too
    os.kill(pids[1], signal.SIGKILL)

    def restarted() -> bool:
        rows = json.loads(state.read_text())["processes"]
        return rows[1]["restarts"] == 1 and rows[1]["state"] == "running"

    _wait_for(restarted, 60, state.read_text)
    pids.append(json.loads(state.read_text())["processes"][1]["pid"])
    proc.kill()
    proc.wait(10)
    _assert_all_gone(pids)
    status = sprig("stack", "status", env={"SPRIG_RUN_DIR": str(tmp_path / "run")})
    assert status.returncode == 1, "a stale state file is not reported as a running stack"


def test_status_lists_a_quickstarts_processes_from_its_state_file(tmp_path):
    """What a running quickstart's supervisor writes is what `stack status` shows; a state
    file whose supervisor is gone is not a running quickstart."""
    import json

    run = tmp_path / "run"
    run.mkdir()
    now = time.time()
    rows = [
        {"name": "server-1", "pid": 4242, "state": "running", "restarts": 2,
         "uptime_s": 5.0, "started_at": now - 125, "last_exit": "killed by SIGKILL",
         "address": "query :8098, admin :8097", "log": "/data/server-1/server-1.log"},
        {"name": "minion", "pid": None, "state": "given up", "restarts": 4, "uptime_s": None,
         "started_at": now - 300, "last_exit": "exit code 1", "address": "queue:minion_untagged",
         "log": "/data/minion/minion.log"},
    ]  # fmt: skip
    state = {"pid": os.getpid(), "console": "http://localhost:9000", "processes": rows}
    (run / "quickstart.json").write_text(json.dumps(state))
    env = {"SPRIG_RUN_DIR": str(run)}

    text = sprig("stack", "status", env=env)
    assert text.returncode == 0, text.stderr
    assert f"A quickstart runs (pid {os.getpid()}, console http://localhost:9000)" in text.stdout
    assert re.search(r"server-1\s+4242\s+running\s+2\s+2m0[5-9]s\s+/data/server-1/", text.stdout)
    assert re.search(r"minion\s+-\s+given up\s+4\s+-\s+/data/minion/minion.log", text.stdout)
    assert "last exit: exit code 1" in text.stdout

    body = json.loads(sprig("stack", "status", "--json", env=env).stdout)
    assert body["running"] is True and body["stack"] is None
    by_name = {row["name"]: row for row in body["processes"]}
    assert by_name["server-1"]["owner"] == "quickstart"
    assert 125 <= by_name["server-1"]["uptime_s"] < 200, "uptime is as of now"
    assert by_name["minion"]["state"] == "given up" and by_name["minion"]["pid"] is None

    state["pid"] = _dead_pid()
    (run / "quickstart.json").write_text(json.dumps(state))
    gone = sprig("stack", "status", "--json", env=env)
    assert gone.returncode == 1 and json.loads(gone.stdout)["running"] is False


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
