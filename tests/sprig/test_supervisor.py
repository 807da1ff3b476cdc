"""Supervision of real child processes: restart with backoff, give up on one that keeps
crashing (and only on that one), tear-down, and the state a status command reads."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from sprig.stack.process import ServiceProcess
from sprig.stack.supervisor import (
    GIVEN_UP,
    RESTARTING,
    RUNNING,
    RestartPolicy,
    Supervisor,
    describe_exit,
    write_state_file,
)

FAST = RestartPolicy(first_delay_s=0.1, max_delay_s=0.4, max_crashes=3, window_s=60)


def _process(tmp_path, name: str, code: str) -> ServiceProcess:
    proc = ServiceProcess(
        name, [sys.executable, "-c", code], log_path=tmp_path / f"{name}.log", ready=lambda: True
    )
    proc.start()
    proc.wait_ready()
    return proc


def _wait(predicate, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_backoff_doubles_from_one_second_up_to_thirty():
    policy = RestartPolicy()
    assert [policy.delay_s(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_an_exit_is_described_by_its_code_or_its_signal():
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"


def test_a_killed_process_is_restarted_and_counted(tmp_path):
    events: list[str] = []
    states: list[list[dict]] = []
    sleeper = _process(tmp_path, "server-1", "import time; time.sleep(60)")
    supervisor = Supervisor(FAST, on_event=events.append, on_change=states.append)
    member = supervisor.adopt(sleeper, address="query :1")
    supervisor.watch()
    try:
        first_pid = sleeper.pid
        os.kill(first_pid, signal.SIGKILL)
        _wait(lambda: member.state == RUNNING and member.restarts == 1)
        assert sleeper.alive() and sleeper.pid != first_pid
        log = str(tmp_path / "server-1.log")
        assert events[0].startswith("server-1 exited (killed by SIGKILL); restarting in 0.1 s")
        assert events[0].endswith(f"Log: {log}")
        assert events[1] == f"server-1 started (pid {sleeper.pid}, restart 1). Log: {log}"
        assert "ready again" in events[2]
        row = supervisor.snapshot()[0]
        assert row["pid"] == sleeper.pid and row["state"] == RUNNING and row["restarts"] == 1
        assert row["last_exit"] == "killed by SIGKILL" and row["log"] == log
        assert row["uptime_s"] is not None and row["uptime_s"] >= 0
        assert any(s[0]["state"] == RESTARTING for s in states), "each change is published"
    finally:
        supervisor.stop()
    assert not sleeper.alive()


def test_a_process_that_keeps_crashing_is_given_up_and_the_others_keep_running(tmp_path):
    events: list[str] = []
    marker = tmp_path / "started-once"
    # runs fine the first time, then crashes on every restart
    crasher = _process(
        tmp_path, "minion",
        f"import os, sys, time\nif os.path.exists({str(marker)!r}): sys.exit(3)\n"
        f"open({str(marker)!r}, 'w').close(); time.sleep(60)",
    )  # fmt: skip
    steady = _process(tmp_path, "broker", "import time; time.sleep(60)")
    supervisor = Supervisor(FAST, on_event=events.append)
    crashing = supervisor.adopt(crasher)
    supervisor.adopt(steady)
    supervisor.watch()
    try:
        _wait(marker.exists)
        os.kill(crasher.pid, signal.SIGTERM)
        _wait(lambda: crashing.state == GIVEN_UP)
        assert crashing.restarts == FAST.max_crashes - 1
        assert crashing.last_exit == "exit code 3"
        assert "crashed 3 times within 1 minute, so it is given up" in events[-1]
        assert events[-1].endswith(f"Log: {tmp_path / 'minion.log'}")
        delays = [
            e.split("restarting in ")[1].split(" s")[0] for e in events if "restarting in" in e
        ]
        assert delays == ["0.1", "0.2"]
        time.sleep(0.5)
        assert steady.alive(), "a given-up process costs no other process"
        rows = {r["name"]: r for r in supervisor.snapshot()}
        assert rows["minion"]["state"] == GIVEN_UP and rows["minion"]["pid"] is None
        assert rows["broker"]["state"] == RUNNING
    finally:
        supervisor.stop()
    assert not steady.alive()


def test_children_left_by_a_dead_leader_are_killed_before_the_restart(tmp_path):
    pidfile = tmp_path / "worker.pid"
    # like gunicorn: the leader forks a worker that would keep holding the port
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    leader = _process(tmp_path, "controller", code)
    worker = int(_wait(lambda: pidfile.exists() and pidfile.read_text()))
    supervisor = Supervisor(FAST, on_event=lambda _: None)
    member = supervisor.adopt(leader)
    supervisor.watch()
    try:
        os.kill(leader.pid, signal.SIGKILL)
        _wait(lambda: not _alive(worker))
        _wait(lambda: member.restarts == 1)
    finally:
        supervisor.stop()


def test_stop_ends_every_process_and_restarts_nothing(tmp_path):
    procs = [_process(tmp_path, f"p{i}", "import time; time.sleep(60)") for i in range(3)]
    supervisor = Supervisor(FAST, on_event=lambda _: None)
    for proc in procs:
        supervisor.adopt(proc)
    supervisor.watch()
    pids = [p.pid for p in procs]
    supervisor.stop()
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in pids)
    assert not any(p.alive() for p in procs), "nothing was restarted after stop"


def test_the_state_file_is_replaced_whole(tmp_path):
    path = tmp_path / "run" / "quickstart.json"
    write_state_file(path, {"pid": 1, "processes": []})
    write_state_file(path, {"pid": 2, "processes": [{"name": "broker"}]})
    assert json.loads(path.read_text()) == {"pid": 2, "processes": [{"name": "broker"}]}
    assert [p.name for p in path.parent.iterdir()] == ["quickstart.json"]


@pytest.mark.parametrize("crashes", [1, 2])
def test_crashes_older_than_the_window_are_forgotten(tmp_path, crashes):
    policy = RestartPolicy(first_delay_s=0.05, max_delay_s=1, max_crashes=2, window_s=0.3)
    proc = _process(tmp_path, "redis", "import time; time.sleep(60)")
    supervisor = Supervisor(policy, on_event=lambda _: None)
    member = supervisor.adopt(proc)
    supervisor.watch()
    try:
        for n in range(1, crashes + 2):
            os.kill(proc.pid, signal.SIGKILL)
            _wait(lambda n=n: member.restarts == n and member.state == RUNNING)
            time.sleep(0.4)  # past the window: the next crash is the first again
        assert member.state == RUNNING
    finally:
        supervisor.stop()


def test_stop_during_the_backoff_restarts_nothing(tmp_path):
    slow = RestartPolicy(first_delay_s=5, max_delay_s=5, max_crashes=3, window_s=60)
    proc = _process(tmp_path, "kafka", "import time; time.sleep(60)")
    events: list[str] = []
    supervisor = Supervisor(slow, on_event=events.append)
    member = supervisor.adopt(proc)
    supervisor.watch()
    os.kill(proc.pid, signal.SIGKILL)
    _wait(lambda: member.state == RESTARTING)
    started = time.monotonic()
    supervisor.stop()
    assert time.monotonic() - started < 3, "stop does not wait out the backoff"
    time.sleep(0.3)
    assert not proc.alive() and member.restarts == 0
    assert not any("started" in e for e in events)


def test_uptime_counts_from_the_process_start_not_from_adoption(tmp_path):
    proc = _process(tmp_path, "zookeeper", "import time; time.sleep(60)")
    time.sleep(0.6)
    supervisor = Supervisor(FAST, on_event=lambda _: None)
    supervisor.adopt(proc)
    try:
        assert supervisor.snapshot()[0]["uptime_s"] >= 0.6
    finally:
        supervisor.stop()
