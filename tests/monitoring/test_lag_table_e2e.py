"""The lag history as a queryable time series: the `consumer_offsets` REALTIME table created
from the shipped schema and table config in a real cluster (ZooKeeper, controller, server,
broker as processes), fed by the sampler from the local Kafka-protocol broker, and read by the
minute through the broker. Lags read back equal end offset minus committed offset."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring import history, tables
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler
from tests.cluster_e2e.conftest import start_cluster, stop_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(
        offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
    )
    consumer.close()


def lag_table_config(bootstrap: str, topic: str) -> dict:
    config = tables.table_config(bootstrap, topic)
    stream = config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    stream["stream.kafka.consumer.prop.fetch.wait.max.ms"] = "10"  # Tansu holds fetches
    return config


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


@pytest.fixture
def lag_cluster(zookeeper, kafka, tmp_path):
    running = start_cluster(zookeeper.address, tmp_path, servers=1)
    try:
        yield running
    finally:
        stop_cluster(running)


def test_sampled_lag_is_queryable_by_the_minute(lag_cluster, kafka):
    bootstrap = kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    suffix = uuid.uuid4().hex[:8]
    source, samples_topic = f"orders-{suffix}", f"lag-samples-{suffix}"
    for topic, partitions in ((source, 2), (samples_topic, 1)):
        admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)

    assert lag_cluster.controller("POST", "/schemas", json=tables.schema()).ok
    response = lag_cluster.controller(
        "POST", "/tables", json=lag_table_config(bootstrap, samples_topic)
    )
    assert response.ok, response.text

    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in (0, 1):
        for n in range(6):
            producer.produce(source, value=b"%d" % n, partition=partition)
            assert producer.flush(10) == 0  # one by one: Tansu's high watermark stays exact
    group = f"billing-{suffix}"

    # Three polls one minute apart; the group commits between them. Partition 1 is never
    # committed in the first round, so its lag is unknown there (null), not 0.
    base_ms = (int(time.time() * 1000) // history.MINUTE_MS - 5) * history.MINUTE_MS
    ticks = iter([base_ms / 1000 + 60 * i + 1 for i in range(3)])
    sampler = LagSampler(KafkaGroupReader(bootstrap), samples_topic, group,
                         clock=lambda: next(ticks))  # fmt: skip
    expected = {}
    for minute, offsets in enumerate(({0: 1}, {0: 3, 1: 2}, {0: 6, 1: 4})):
        commit(bootstrap, group, source, offsets)
        records = sampler.poll_once()
        sampler.publish(records)
        for r in records:
            expected[(base_ms + minute * history.MINUTE_MS, r["topic"], r["partition"])] = (
                r["offset"], r["logEndOffset"], r["lag"])  # fmt: skip
    assert len(expected) == 5  # partition 1 appears once committed (the group owns no member)

    sql = history.lag_per_minute_sql(group, base_ms, base_ms + 10 * history.MINUTE_MS)
    rows = wait_rows(lag_cluster, sql, len(expected))
    got = {(r["minute"], r["topic"], r["partition"]): (r["committed"], r["endOffset"], r["lag"])
           for r in rows}  # fmt: skip
    assert got == expected
    for committed, end, lag in got.values():
        assert lag == end - committed
    assert [lag for (_, _, p), (_, _, lag) in sorted(got.items()) if p == 0] == [5, 3, 0]

    series = history.lag_series(rows)
    assert [point["lag"] for point in series[f"{source}/1"]] == [4, 2]

    # Another group's samples are not mixed in; a group name with a quote is a literal.
    other = wait_rows(lag_cluster, history.lag_per_minute_sql("x' OR '1'='1", 0, 2**62), 0)
    assert other == []
    stored = history.samples_by_partition(
        wait_rows(lag_cluster, history.samples_sql(group, 0, 2**62), 5)
    )
    assert {tp: [s.committed for s in rows] for tp, rows in stored.items()} == {
        (source, 0): [1, 3, 6], (source, 1): [2, 4],
    }  # fmt: skip
