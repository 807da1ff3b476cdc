"""ZooKeeper membership against the real ZooKeeper: a Membership loop connects (retrying while
ZooKeeper cannot be reached), registers the instance config and the live-instance node,
registers again in a new session, and its node goes as soon as the participant stops."""

from __future__ import annotations

import time
import uuid

import pytest
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStore, InstanceConfig
from engine.runtime import Membership, Participant
from sprig.stack.process import free_port

pytestmark = pytest.mark.integration


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    yield ClusterStore(client, f"member_{uuid.uuid4().hex[:8]}")
    client.stop()
    client.close()


def minion(address: str, cluster: str) -> Participant:
    config = InstanceConfig("Minion_testhost_m1", "testhost", -1, ["minion_untagged"])
    return Participant(address, cluster, config, session_timeout_s=4.0)


def test_membership_registers_and_registers_again_in_a_new_session(zookeeper, store):
    participant = minion(zookeeper.address, store.paths.cluster_name)
    membership = Membership(participant, interval_s=1.0, connect_timeout_s=5.0)
    membership.start()  # connects in its own thread: the caller never waits for ZooKeeper
    try:
        wait_for(lambda: "Minion_testhost_m1" in store.live_instances(), what="registration")
        assert store.instance_config("Minion_testhost_m1").tags == ["minion_untagged"]
        old = store.live_instances()["Minion_testhost_m1"].session_id

        killer = KazooClient(hosts=zookeeper.address, client_id=participant.client.client_id)
        killer.start(timeout=10)  # the same session from elsewhere, closed: it expires
        killer.stop()
        killer.close()
        wait_for(lambda: (live := store.live_instances().get("Minion_testhost_m1")) is not None
                 and live.session_id != old, what="registration in the new session")  # fmt: skip
    finally:
        membership.stop()
        participant.stop()
    assert "Minion_testhost_m1" not in store.live_instances()  # gone at once, not at timeout
    assert store.instance_config("Minion_testhost_m1") is not None  # the config stays


def test_membership_retries_while_zookeeper_cannot_be_reached():
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens here
    participant = minion(nowhere, "PinotCluster")
    membership = Membership(participant, interval_s=1.0, connect_timeout_s=0.3,
                            backoff_s=0.05, max_backoff_s=0.1)  # fmt: skip
    membership.start()
    try:
        wait_for(lambda: membership.failures >= 2, timeout_s=10, what="retries")
        assert not membership.ready.is_set() and participant.registered_session is None
    finally:
        membership.stop(timeout_s=5)
        participant.stop()
