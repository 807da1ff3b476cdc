"""Leader election between two controllers (two ControllerRuntime objects, each with its own
ZooKeeper session): only the leader aggregates external views and runs periodic tasks, and
the second takes over when the first goes away."""

from __future__ import annotations

import threading
import time

import pytest

from cluster.runtime import ControllerRuntime
from controller.zk import new_client
from engine.clusterstate import ResourceAssignment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db]


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture
def runtimes(cluster_settings):
    runs: list[tuple[str, str]] = []
    lock = threading.Lock()
    made: list[ControllerRuntime] = []

    def make(port: int) -> ControllerRuntime:
        def run_task(store, name):
            with lock:
                runs.append((name, runtime.instance_id))

        runtime = ControllerRuntime(
            lambda: new_client(cluster_settings.ZK_ADDRESS),
            cluster_settings.CLUSTER_NAME,
            "127.0.0.1",
            port,
            task_frequencies_s={"CountingTask": 0.1},
            initial_delay_s=0.0,
            external_view_interval_s=0.1,
            run_task=run_task,
        )
        made.append(runtime)
        runtime.start()
        assert runtime.wait_started(15)
        return runtime

    yield make, runs, lock
    for runtime in made:
        runtime.stop()


def test_leader_failover_between_two_controllers(api, store, runtimes, fake_servers):
    make, runs, lock = runtimes
    first = make(9001)
    assert first.wait_leader(10)
    second = make(9002)
    assert wait_for(lambda: store.controller_leader() == "Controller_127.0.0.1_9001")
    assert api.get("/cluster/info").json()["leaderController"] == "Controller_127.0.0.1_9001"
    live = store.live_instances()
    assert {"Controller_127.0.0.1_9001", "Controller_127.0.0.1_9002"} <= set(live)
    assert "Controller_127.0.0.1_9002" in api.get("/instances").json()["instances"]
    time.sleep(0.5)
    assert not second.is_leader
    with lock:
        assert {who for _, who in runs} == {"Controller_127.0.0.1_9001"}

    # the leader aggregates the external view from a server's current state
    server = fake_servers("Server_127.0.0.1_8001")
    store.put_ideal_state(ResourceAssignment("t_OFFLINE", {"s1": {server.ident: "ONLINE"}}))
    server.sync()
    assert wait_for(lambda: (store.external_view("t_OFFLINE") or ResourceAssignment("")).segments
                    == {"s1": {server.ident: "ONLINE"}})  # fmt: skip

    first.stop()
    assert wait_for(lambda: second.is_leader, timeout=20)
    assert wait_for(lambda: store.controller_leader() == "Controller_127.0.0.1_9002")
    assert "Controller_127.0.0.1_9001" not in store.live_instances()
    with lock:
        runs.clear()
    time.sleep(0.5)
    with lock:
        assert runs and {who for _, who in runs} == {"Controller_127.0.0.1_9002"}
    # the new leader keeps the external view up to date
    store.put_ideal_state(ResourceAssignment("t_OFFLINE", {"s1": {server.ident: "ONLINE"},
                                                           "s2": {server.ident: "ONLINE"}}))  # fmt: skip
    server.sync()
    assert wait_for(lambda: "s2" in store.external_view("t_OFFLINE").segments)
    leader_record = store.get_record(store.paths.controller_leader)[0]
    assert leader_record.simple_fields["LEADER"] == "Controller_127.0.0.1_9002"


def test_controller_reregisters_after_session_expiry(store, runtimes, cluster_settings):
    make, _, _ = runtimes
    runtime = make(9003)
    assert runtime.wait_leader(10)
    # expire the session the way ZooKeeper does: a second client with the same session id
    # and password closes it
    from kazoo.client import KazooClient

    session_id, password = runtime.client.client_id
    thief = KazooClient(hosts=cluster_settings.ZK_ADDRESS, client_id=(session_id, password))
    thief.start(timeout=10)
    thief.stop()
    thief.close()
    assert wait_for(lambda: not runtime.is_leader or runtime.client.client_id[0] != session_id,
                    timeout=30)  # fmt: skip
    assert wait_for(lambda: runtime.is_leader and runtime.client.client_id[0] != session_id,
                    timeout=30)  # fmt: skip
    assert wait_for(lambda: "Controller_127.0.0.1_9003" in store.live_instances(), timeout=15)
