"""Broker faults under a REALTIME table, on a 3-broker Kafka cluster started here (the session's
Kafka has one node) and a cluster of our own whose server calls a partition stalled after 6 s
(SPRIG_REALTIME_STALL_S). Topics have replication factor 3 and min.insync.replicas 2; an
idempotent producer with acks=all writes, and the table must end with every acknowledged row
exactly once (COUNT, COUNT DISTINCT and SUM).

- **Stall.** The leader of the consumed partition is frozen with SIGSTOP. Kafka fences it and
  elects a new leader, the producer moves on, but the server's consumer waits on the frozen
  broker (its fetch times out only after 60 s): no progress while the partition grows. The
  server detects it, warns once, counts it in its metrics, reports it in consumingSegmentsInfo
  and the console's table page shows it; recreating the consumer finds the new leader and
  consumption goes on. Then SIGCONT.
- **Leader killed.** The leader of a consumed partition is SIGKILLed: consumption continues
  from the new leader.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
import uuid

import orjson
import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sprig.stack import kafka_cluster
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.cluster_e2e.realtime_helpers import SCHEMA, table_config, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]
STALL_S = 6


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    nodes = kafka_cluster(tmp_path_factory.mktemp("kafka3"), 3, heap="256m")
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_ready()
        yield nodes
    finally:
        for node in nodes:
            if node.pid:
                with contextlib.suppress(ProcessLookupError):  # a frozen node must stop too
                    os.kill(node.pid, signal.SIGCONT)
            node.stop()


@pytest.fixture(scope="module")
def cluster(zookeeper, brokers, tmp_path_factory):
    running = start_cluster(zookeeper.address, tmp_path_factory.mktemp("rt"), servers=1,
                            extra_env={"SPRIG_REALTIME_STALL_S": str(STALL_S)})  # fmt: skip
    yield running
    stop_cluster(running)


def bootstrap_of(nodes) -> str:
    return ",".join(node.bootstrap_servers for node in nodes)


def replicated_table(cluster, nodes, name: str, partitions: int) -> str:
    """A topic with 3 replicas (2 in sync at least) and a REALTIME table `name` on it."""
    topic = f"{name}_{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap_of(nodes)})
    new = NewTopic(topic, partitions, replication_factor=3,
                   config={"min.insync.replicas": "2"})  # fmt: skip
    admin.create_topics([new])[topic].result(30)
    schema = {**SCHEMA, "schemaName": name}
    assert cluster.controller("POST", "/schemas", json=schema).ok
    config = table_config(bootstrap_of(nodes), topic)
    config["tableName"] = config["segmentsConfig"]["schemaName"] = name
    config["tableIndexConfig"]["streamConfigs"]["realtime.segment.flush.threshold.rows"] = "1000"
    response = cluster.controller("POST", "/tables", json=config)
    assert response.ok, response.text
    return topic


class AckedProducer:
    """Rows `first`..`last - 1`, spread over the partitions, idempotent with acks=all, at
    `rate` rows/s; remembers which Kafka acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float):
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acked: set[int] = set()
        self.failed: list[str] = []
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5,
                                   "log_level": 2})  # fmt: skip

    def _delivered(self, err, message) -> None:
        if err is None:
            self.acked.add(orjson.loads(message.value())["n"])
        else:
            self.failed.append(err.str())

    def produce(self, first: int, last: int) -> None:
        started = time.monotonic()
        for n in range(first, last):
            record = {"user": f"u{n % 9}", "n": n, "ts": 1_700_000_000_000 + n}
            self._producer.produce(self.topic, orjson.dumps(record),
                                   partition=n % self.partitions,
                                   on_delivery=self._delivered)  # fmt: skip
            self._producer.poll(0)
            time.sleep(max(0.0, started + (n - first + 1) / self.rate - time.monotonic()))
        assert self._producer.flush(120) == 0


def wait_exactly(cluster, table: str, rows: int) -> None:
    """COUNT(*), COUNT(DISTINCT n) and SUM(n) of rows 0..rows-1, each exactly once."""
    expected = [rows, rows, sum(range(rows))]
    sql = f"SELECT COUNT(*), COUNT(DISTINCT n), SUM(n) FROM {table}"
    last = {}

    def complete():
        last["answer"] = cluster.query(sql)
        got = last["answer"].get("resultTable", {}).get("rows")
        return got and [int(v) for v in got[0]] == expected

    try:
        wait_until(complete, "every acknowledged row exactly once", 180)
    except AssertionError:
        raise AssertionError(f"expected {expected}, last answer {last}") from None


def leader_of(nodes, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap_of(nodes)})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def moved_leader(nodes, topic: str, old: int):
    """A check for wait_until: the partition's new leader, asked of the other nodes."""
    admin = AdminClient({"bootstrap.servers": bootstrap_of(nodes), "log_level": 0})

    def check():
        meta = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
        return meta.leader not in (-1, old) and meta.leader

    return check


def stalled_entries(cluster, table: str) -> list[dict]:
    body = cluster.controller("GET", f"/tables/{table}/consumingSegmentsInfo").json()
    infos = [i for entries in body["_segmentToConsumingInfoMap"].values() for i in entries]
    return [i for i in infos if i.get("stalled")]


def server_metric(cluster, name: str) -> float:
    server = next(iter(cluster.servers.values()))
    admin_port = server.argv[server.argv.index("--admin-port") + 1]
    text = requests.get(f"http://127.0.0.1:{admin_port}/metrics", timeout=10).text
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(name + "{")]  # fmt: skip
    return sum(values)


def test_a_consumer_stuck_on_a_frozen_leader_is_detected_and_recreated(cluster, brokers):
    from playwright.sync_api import expect, sync_playwright

    from tests.console.conftest import CHROMIUM, CHROMIUM_ARGS

    table = "stalls"
    topic = replicated_table(cluster, brokers, table, 1)
    producer = AckedProducer(bootstrap_of(brokers), topic, 1, rate=500)
    producer.produce(0, 200)
    wait_exactly(cluster, table, 200)
    leader = leader_of(brokers, topic, 0)
    frozen = next(node for node in brokers if node.node_id == leader)
    others = [node for node in brokers if node is not frozen]
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page(base_url=cluster.controller_url)
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            wait_until(moved_leader(others, topic, leader), "a new leader", 60)
            # a producer that starts now goes to the new leader at once
            AckedProducer(bootstrap_of(others), topic, 1, rate=500).produce(200, 400)
            seen = wait_until(lambda: stalled_entries(cluster, table), "the stall reported",
                              90, interval_s=0.2)  # fmt: skip
            page.goto(f"/console/tables/{table}")
            expect(page.get_by_test_id("stalled")).to_contain_text("stalled", timeout=10_000)
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
            chromium.close()
    assert seen[0]["stalledSinceMs"] > 0
    wait_exactly(cluster, table, 400)  # the recreated consumer read on: nothing lost or doubled
    assert stalled_entries(cluster, table) == []
    server = next(iter(cluster.servers.values()))
    warnings = re.findall(r"stalled, no progress", server.log_path.read_text())
    assert len(warnings) == 1  # logged once
    assert server_metric(cluster, "sprig_server_realtime_stalls_total") == 1
    assert server_metric(cluster, "sprig_server_realtime_partition_stalled") == 0
    wait_until(lambda: len(AdminClient({"bootstrap.servers": bootstrap_of(brokers)})
                           .list_topics(timeout=5).brokers) == 3,
               "the thawed broker back in the cluster", 60)  # fmt: skip


def test_a_killed_partition_leader_loses_and_doubles_nothing(cluster, brokers):
    table = "replicated"
    topic = replicated_table(cluster, brokers, table, 2)
    producer = AckedProducer(bootstrap_of(brokers), topic, 2, rate=300)
    thread = threading.Thread(target=producer.produce, args=(0, 3000))
    thread.start()
    wait_until(lambda: len(producer.acked) >= 1000, "a third of the rows acknowledged")
    leader = leader_of(brokers, topic, 0)
    victim = next(node for node in brokers if node.node_id == leader)
    os.kill(victim.pid, signal.SIGKILL)
    others = [node for node in brokers if node is not victim]
    wait_until(moved_leader(others, topic, leader), "a new leader for partition 0", 60)
    thread.join(180)
    assert not thread.is_alive()
    assert producer.failed == [] and producer.acked == set(range(3000))
    wait_exactly(cluster, table, 3000)
