"""What the lag-history tests with a real cluster share: a one-server cluster, committing a
group's offsets, producing records, and waiting for rows."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from monitoring import history
from tests.cluster_e2e.conftest import Cluster, start_cluster, stop_cluster


@pytest.fixture
def lag_cluster(zookeeper, kafka, tmp_path) -> Iterator[Cluster]:
    # the alert tests' webhook listens on loopback, which the operator must allow
    running = start_cluster(zookeeper.address, tmp_path, servers=1,
                            extra_env={"SPRIG_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"})  # fmt: skip
    try:
        yield running
    finally:
        stop_cluster(running)


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(
        offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
    )
    consumer.close()


def produce(bootstrap: str, topic: str, count: int, partition: int | None = None) -> None:
    """``count`` messages (b"0", b"1", ...)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    where = {} if partition is None else {"partition": partition}
    for n in range(count):
        producer.produce(topic, value=b"%d" % n, **where)
    assert producer.flush(10) == 0


def wait_rows(cluster, sql: str, expected: int, timeout_s: float = 90) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    rows: list[dict] = []
    while time.monotonic() < deadline:
        try:
            rows = history.rows_of(cluster.query(sql))
        except (ValueError, AssertionError):
            rows = []
        if len(rows) >= expected:
            return rows
        time.sleep(0.5)
    raise AssertionError(f"expected {expected} rows from {sql}, last: {rows}")


def run_evaluator(cluster) -> dict:
    response = cluster.controller(
        "GET", "/periodictask/run", params={"taskname": "ConsumerLagAlertEvaluator"}
    )
    body = response.json()
    assert response.ok and body["isSuccessful"], body
    return body["taskReport"]
