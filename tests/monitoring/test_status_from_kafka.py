"""Burrow status from real commits: consumers commit through confluent-kafka to the session's
Kafka, the collector samples them each round, and the samples are evaluated.
A group that keeps up is OK, one that stops is STOP after its window, one reset to an earlier
offset is REWIND.

Rounds are 10 s apart on a simulated clock (the collector takes the clock), so the test does
not sleep. The groups commit without joining (as a consumer with assign() does); Kafka lists
such a group as Empty."""

import uuid
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring.evaluation.burrow import Status, group_status
from monitoring.evaluation.window import Sample, WindowConfig, evaluate_samples
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler

pytestmark = pytest.mark.integration

# Committed offset per round for each group (None: no commit that round); 10 records a round.
SCRIPTS = {
    "keeper": [10, 20, 30, 40, 50, 60, 70, 80, 90],
    "stopper": [10, 20, 30, 40, None, None, None, None, None],
    "rewinder": [10, 20, 30, 40, 50, 5, 8, 12, 16],
}


def test_keeping_up_stopping_and_rewinding_groups(kafka):
    bootstrap = kafka.bootstrap_servers
    topic = f"status-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures need the handle
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=10)
    prefix = uuid.uuid4().hex[:6]
    groups = {name: f"{prefix}-{name}" for name in SCRIPTS}
    consumers = {
        name: Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                        "enable.auto.commit": False})
        for name, group in groups.items()
    }  # fmt: skip
    producer = Producer({"bootstrap.servers": bootstrap})
    clock = {"now": 0.0}
    sampler = LagSampler(KafkaGroupReader(bootstrap), "unused", f"{prefix}-*",
                         clock=lambda: clock["now"])  # fmt: skip
    samples = defaultdict(list)
    try:
        for round_ in range(9):
            clock["now"] = round_ * 10.0
            for _ in range(10):
                producer.produce(topic, value=b"x", partition=0)
            assert producer.flush(10) == 0
            for name, script in SCRIPTS.items():
                if script[round_] is not None:
                    offsets = [TopicPartition(topic, 0, script[round_])]
                    consumers[name].commit(offsets=offsets, asynchronous=False)
            for record in sampler.poll_once():
                samples[record["group"]].append(Sample.from_record(record))
    finally:
        for consumer in consumers.values():
            consumer.close()

    config = WindowConfig(intervals=5)
    now_ms = 80_000
    statuses = {
        name: evaluate_samples(topic, 0, samples[group], now_ms, config)
        for name, group in groups.items()
    }
    assert statuses["keeper"].status == Status.OK
    assert statuses["keeper"].current_lag == 0
    assert statuses["stopper"].status == Status.STOP
    assert statuses["stopper"].current_lag == 50
    assert statuses["rewinder"].status == Status.REWIND
    assert group_status(groups["stopper"], [statuses["stopper"]]).status == Status.ERR
    # Not yet STOP while its last commit was younger than its window's span, nor while a
    # recent end offset showed it caught up (Burrow's grace).
    for earlier_ms in (50_000, 70_000):
        status = evaluate_samples(topic, 0, samples[groups["stopper"]], earlier_ms, config)
        assert status.status == Status.OK
