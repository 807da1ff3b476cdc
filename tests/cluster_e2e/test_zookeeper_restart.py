"""ZooKeeper restarts under a running cluster: queries keep being answered from the routing
the broker already has, and afterwards servers and brokers are live again and follow new
changes (watches re-established) without being restarted."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from sprig.stack import ZooKeeperService
from tests.cluster_e2e.conftest import TABLE, load_airline, start_cluster, stop_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_servers_and_brokers_recover_from_a_zookeeper_restart(
    tmp_path, pinot_examples, airline_tars
):
    zookeeper = ZooKeeperService(tmp_path / "zk")
    zookeeper.start()
    try:
        zookeeper.wait_ready()
        cluster = start_cluster(zookeeper.address, tmp_path / "cluster", servers=1)
        try:
            load_airline(cluster, pinot_examples, airline_tars[:3], replication=1)
            cluster.wait_all_online()
            cluster.wait_broker_sees(cluster.total_rows)

            zookeeper.stop()
            # ZooKeeper is down: the broker answers from the routing table it has
            response = cluster.query(f"SELECT COUNT(*) FROM {TABLE}")
            assert response["resultTable"]["rows"] == [[cluster.total_rows]]
            time.sleep(2.0)
            zookeeper.start()
            zookeeper.wait_ready()

            expected = {*cluster.servers, f"Broker_127.0.0.1_{cluster.broker_port}"}
            client = KazooClient(hosts=zookeeper.address)
            client.start(timeout=15)
            try:
                live_path = f"/{cluster.env['SPRIG_CLUSTER_NAME']}/LIVEINSTANCES"
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if expected <= set(client.get_children(live_path)):
                        break
                    time.sleep(0.3)
                assert expected <= set(client.get_children(live_path))
            finally:
                client.stop()
                client.close()

            # a segment pushed after the restart is loaded and routed
            load_more(cluster, airline_tars[3:4])
            cluster.wait_all_online(timeout_s=60)
            cluster.wait_broker_sees(cluster.total_rows)
        finally:
            stop_cluster(cluster)
    finally:
        zookeeper.stop()


def load_more(cluster, tars) -> None:
    for name, tar, rows in tars:
        deadline = time.monotonic() + 30
        while True:  # the controller may still be reconnecting to ZooKeeper (503)
            with tar.open("rb") as handle:
                response = cluster.controller(
                    "POST", "/segments", params={"tableName": TABLE, "tableType": "OFFLINE"},
                    files={"file": (tar.name, handle, "application/gzip")},
                )  # fmt: skip
            if response.ok or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert response.ok, f"upload {name}: {response.status_code} {response.text}"
        cluster.segments.append(name)
        cluster.total_rows += rows
