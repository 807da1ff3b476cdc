"""Unit tests of the child-process handling: ports, readiness, failure messages, tear-down."""

import os
import socket
import sys
import time

import pytest

from sprig.stack.process import ServiceError, ServiceProcess, choose_port, free_port


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_in_use_moves_to_the_next_free_one(busy_port):
    chosen = choose_port("redis", busy_port)
    assert chosen != busy_port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", chosen))


def test_an_explicit_port_in_use_is_an_error_naming_it(busy_port):
    with pytest.raises(ServiceError, match=rf"controller: port {busy_port} is already in use"):
        choose_port("controller", busy_port, strict=True)


def test_a_free_preferred_port_is_kept():
    port = free_port()
    assert choose_port("zookeeper", port) == port


def test_a_service_that_exits_early_is_named_with_its_log_tail(tmp_path):
    code = "print('bad config: no such option --frob'); raise SystemExit(3)"
    proc = ServiceProcess(
        "zookeeper", [sys.executable, "-c", code], log_path=tmp_path / "zk.log", ready=lambda: False
    )
    proc.start()
    with pytest.raises(ServiceError) as err:
        proc.wait_ready()
    message = str(err.value)
    assert "zookeeper exited with code 3" in message
    assert "bad config: no such option --frob" in message


def test_a_service_that_never_gets_ready_times_out_with_its_log_tail(tmp_path):
    code = "import time; print('still warming up', flush=True); time.sleep(60)"
    proc = ServiceProcess(
        "kafka",
        [sys.executable, "-c", code],
        log_path=tmp_path / "k.log",
        ready=lambda: False,
        timeout_s=1.5,
    )
    proc.start()
    with pytest.raises(ServiceError) as err:
        proc.wait_ready()
    assert "kafka did not come up within 2s" in str(err.value)
    assert "still warming up" in str(err.value)
    assert not proc.alive(), "a service that timed out is stopped"


def test_stop_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    proc = ServiceProcess(
        "redis", [sys.executable, "-c", code], log_path=tmp_path / "r.log", ready=pidfile.exists
    )
    proc.start()
    proc.wait_ready()
    time.sleep(0.1)
    grandchild = int(pidfile.read_text())
    proc.stop(timeout_s=5)
    assert not proc.alive()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_a_missing_binary_is_a_clear_error(tmp_path):
    proc = ServiceProcess(
        "redis", ["/nonexistent/redis-server"], log_path=tmp_path / "r.log", ready=lambda: True
    )
    with pytest.raises(ServiceError, match=r"redis: cannot run '/nonexistent/redis-server'"):
        proc.start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill 0; it is dead for our purpose
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_ports_chosen_together_differ_while_nothing_listens_yet(busy_port):
    # the broker's and a server's preferred ports are both taken: each gets its own next one
    first = choose_port("broker", busy_port)
    second = choose_port("server", busy_port)
    assert first != busy_port and second != busy_port and first != second
