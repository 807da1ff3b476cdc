"""The lag collector against the session's Kafka: it samples every group's committed offsets,
end offsets and lag, and produces them as JSON records that read back. The groups commit
without joining (`commit(offsets=...)`), which Kafka lists as Empty groups."""

import threading
import uuid

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring import groups as g
from monitoring.errors import KafkaUnavailableError
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler, sample_records


def test_records_carry_the_seed_fields_end_offset_and_lag_with_unknowns_as_null():
    description = g.GroupDescription(
        "billing", g.STABLE, (g.Member("m", assignment=(("orders", 1),)),)
    )
    commits = {("orders", 0): g.Commit(5, leader_epoch=2)}
    rows = g.offset_rows(description, commits, {("orders", 0): 9, ("orders", 1): 4})
    records = sample_records([g.GroupOffsets(description, rows)], now_ms=1_700_000_000_000)
    assert records == [
        {"topic": "orders", "partition": 1, "group": "billing", "version": None, "offset": None,
         "metadata": None, "commitTimestamp": 1_700_000_000_000, "expireTimestamp": None,
         "logEndOffset": 4, "lag": None, "source": "collector"},
        {"topic": "orders", "partition": 0, "group": "billing", "version": None, "offset": 5,
         "metadata": None, "commitTimestamp": 1_700_000_000_000, "expireTimestamp": None,
         "logEndOffset": 9, "lag": 4, "source": "collector", "leaderEpoch": 2},
    ]  # fmt: skip


def make_topic(admin, partitions=1) -> str:
    topic = f"sampled-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(timeout=10)
    return topic


def read_all(kafka, topic, expected, timeout_polls=100):
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "reader",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages = []
    try:
        for _ in range(timeout_polls):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                messages.append(message)
            if len(messages) >= expected:
                break
    finally:
        consumer.close()
    return messages


@pytest.mark.integration
def test_sampler_produces_one_record_per_committed_partition(kafka):
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    source, samples_topic = make_topic(admin, partitions=2), make_topic(admin)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for partition in (0, 1):
        for n in range(4):
            producer.produce(source, value=b"%d" % n, partition=partition)
    assert producer.flush(10) == 0
    prefix = f"lagtest-{uuid.uuid4().hex[:6]}"
    for group, offsets in ((f"{prefix}-a", [1, 4]), (f"{prefix}-b", [3])):
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                             "enable.auto.commit": False})  # fmt: skip
        consumer.commit(
            offsets=[TopicPartition(source, p, o) for p, o in enumerate(offsets)],
            asynchronous=False,
        )
        consumer.close()

    ticks = iter([1000.0, 1060.0])
    sampler = LagSampler(
        KafkaGroupReader(kafka.bootstrap_servers), samples_topic, f"{prefix}-*",
        clock=lambda: next(ticks),
    )  # fmt: skip
    assert sampler.publish(sampler.poll_once()) == 3
    got = [(m.key().decode(), orjson.loads(m.value())) for m in read_all(kafka, samples_topic, 3)]
    summary = sorted((k, r["offset"], r["logEndOffset"], r["lag"], r["commitTimestamp"])
                     for k, r in got)  # fmt: skip
    assert summary == [
        (f"{prefix}-a/{source}/0", 1, 4, 3, 1_000_000),
        (f"{prefix}-a/{source}/1", 4, 4, 0, 1_000_000),
        (f"{prefix}-b/{source}/0", 3, 4, 1, 1_000_000),
    ]

    # Next round: the group caught up on partition 0; the new sample says so.
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers,
                         "group.id": f"{prefix}-b", "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(source, 0, 4)], asynchronous=False)
    consumer.close()
    assert sampler.publish(sampler.poll_once()) == 3
    latest = [orjson.loads(m.value()) for m in read_all(kafka, samples_topic, 6)][3:]
    b_rows = [r for r in latest if r["group"] == f"{prefix}-b"]
    assert [(r["offset"], r["lag"], r["commitTimestamp"]) for r in b_rows] == [(4, 0, 1_060_000)]


@pytest.mark.integration
def test_run_samples_every_interval_until_stopped(kafka):
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    source, samples_topic = make_topic(admin), make_topic(admin)
    group = f"looped-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(source, 0, 0)], asynchronous=False)
    consumer.close()
    sampler = LagSampler(KafkaGroupReader(kafka.bootstrap_servers), samples_topic, group)
    stop = threading.Event()
    thread = threading.Thread(target=sampler.run, args=(0.3, stop))
    thread.start()
    try:
        messages = read_all(kafka, samples_topic, 3)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    stamps = [orjson.loads(m.value())["commitTimestamp"] for m in messages[:3]]
    assert len(stamps) == 3 and stamps == sorted(stamps) and len(set(stamps)) == 3


def test_an_unreachable_cluster_fails_a_round_with_a_clear_error():
    sampler = LagSampler(KafkaGroupReader("127.0.0.1:1", timeout_s=0.3), "t",
                         producer_config={"log_level": 0})  # fmt: skip
    with pytest.raises(KafkaUnavailableError, match="could not list the consumer groups"):
        sampler.poll_once()
    with pytest.raises(KafkaUnavailableError, match="could not produce 1 lag sample"):
        sampler.publish([{"group": "g", "topic": "t", "partition": 0}], timeout_s=0.5)
    with pytest.raises(ValueError, match="interval must be positive"):
        sampler.run(0, threading.Event())
