"""Lag history set up on a running cluster as the quickstart does: the topic, the table from
the shipped files (once; a second call leaves it), and a sampler thread whose samples the
broker serves; an unreachable controller is a clear error."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring import history
from monitoring.errors import MonitoringError
from monitoring.lag_table import ensure_lag_table, start_sampling
from sprig.cli import main
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.monitoring.conftest import wait_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_table_is_created_once_and_the_sampler_thread_feeds_it(
    zookeeper, kafka, tmp_path, capsys
):
    cluster = start_cluster(zookeeper.address, tmp_path, servers=1)
    stop_sampling = None
    try:
        bootstrap = kafka.bootstrap_servers
        suffix = uuid.uuid4().hex[:8]
        topic, samples = f"events-{suffix}", f"samples-{suffix}"
        # one partition, created up front: an auto-created topic has several, and unkeyed
        # messages may land on any of them
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(10)
        producer = Producer({"bootstrap.servers": bootstrap})
        for n in range(5):
            producer.produce(topic, value=b"%d" % n)
            assert producer.flush(10) == 0
        group = f"audit-{suffix}"
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "enable.auto.commit": False})  # fmt: skip
        consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        consumer.close()

        init = ["consumer-offsets", "init", "--controller", cluster.controller_url,
                "--bootstrap-server", bootstrap, "--topic", samples]  # fmt: skip
        assert main(init) == 0
        assert "Created the consumer_offsets REALTIME table" in capsys.readouterr().out
        assert main(init) == 0  # the second run changes nothing and says so
        assert "already exists" in capsys.readouterr().out
        assert ensure_lag_table(cluster.controller_url, bootstrap, samples) is False
        stop_sampling = start_sampling(bootstrap, 0.5, samples)
        sql = history.samples_sql(group, 0, 2**62)
        rows = wait_rows(cluster, sql, 2)
        assert {(r["topic"], r["offset"], r["logEndOffset"]) for r in rows} == {(topic, 2, 5)}
    finally:
        if stop_sampling:
            stop_sampling()
        stop_cluster(cluster)


def test_an_unreachable_controller_is_named(kafka):
    with pytest.raises(
        MonitoringError, match=r"cannot reach the controller at http://127\.0\.0\.1:1"
    ):
        ensure_lag_table("http://127.0.0.1:1", kafka.bootstrap_servers, f"s-{uuid.uuid4().hex}")


def test_init_names_an_unreachable_controller_and_a_bad_replica_count(kafka, capsys):
    base = ["consumer-offsets", "init", "--bootstrap-server", kafka.bootstrap_servers]
    assert (
        main([*base, "--controller", "http://127.0.0.1:1", "--topic", f"s-{uuid.uuid4().hex}"]) != 0
    )
    assert "cannot reach the controller at http://127.0.0.1:1" in capsys.readouterr().err
    assert main([*base, "--replicas", "0"]) != 0
    assert "--replicas must be at least 1, got 0" in capsys.readouterr().err
