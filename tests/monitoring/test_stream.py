"""`sprig consumer-offsets stream` on the session's Kafka, over a topic of hand-made
`__consumer_offsets` records (the shared vectors' layout, plus broken ones Kafka never writes),
so every kind of record and every bad input is covered; the job over Kafka's own
`__consumer_offsets` is tests/monitoring/test_real_consumer_offsets.py. The JSON topic it writes
is read back with read_committed, as the table reads it."""

import os
import signal
import subprocess
import sys
import time
import uuid

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import REGISTRY

from monitoring.stream import SOURCE_HEADER, OffsetsStream
from sprig.cli import main
from tests.monitoring.offsets_bytes import commit_key, commit_value_v3

pytestmark = pytest.mark.integration
h = bytes.fromhex


def topics(kafka, *partitions: int) -> list[str]:
    names = [f"t{uuid.uuid4().hex[:10]}" for _ in partitions]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    new = [NewTopic(n, num_partitions=p) for n, p in zip(names, partitions, strict=True)]
    for future in admin.create_topics(new).values():
        future.result(timeout=10)
    return names


def produce(kafka, topic: str, records) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 20})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


def read_all(kafka, topic: str, partitions: int) -> list:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "reader",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, eof, deadline = [], set(), time.monotonic() + 30
    try:
        while len(eof) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                eof.add(message.partition())
                continue
            eof.discard(message.partition())
            out.append(message)
    finally:
        consumer.close()
    return out


def committed(kafka, group: str, topic: str, partitions: int) -> int:
    """The input offsets ``group`` has committed on ``topic``, summed over its partitions."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
        return sum(max(tp.offset, 0) for tp in tps)
    finally:
        consumer.close()


def stream(kafka, capsys, *args: str) -> str:
    code = main(["consumer-offsets", "stream", "--bootstrap-server", kafka.bootstrap_servers,
                 "--until-idle", "2", *args])  # fmt: skip
    assert code == 0
    return capsys.readouterr().err


def skipped(reason: str) -> float:
    return REGISTRY.get_sample_value("sprig_consumer_offsets_skipped_total",
                                     {"reason": reason}) or 0.0  # fmt: skip


def test_commits_become_seed_json_and_bad_records_are_counted_and_skipped(kafka, capsys):
    source, target = topics(kafka, 1, 1)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    key = h("0001000867726f75702d69640003666f6f00000001")
    before = {
        r: skipped(r)
        for r in (
            "undecodable key type 1",
            "key type 99",
            "key type 3",
            "offset commit value v9",
            "undecodable no key type",
        )
    }
    produce(kafka, source, [
        (key, h("0000000000000000006400086d6574616461746100000000000004d2")),  # v0
        (key, h("000400000000000000640000000a096d6574616461746100000000000004d200")),  # v4
        (commit_key(group, "in", 0), commit_value_v3(7, 99)),  # the job's own commit
        (key, None),  # tombstone: a row with a null offset
        (h("0003000867726f75702d6964"), h("0000")),  # KIP-848 record
        (key, h("0003ffff")),  # a v3 value cut short: counted, the stream goes on
        (h("0063000867726f75702d6964"), h("0000")),  # an unknown key version (99)
        (key, h("0009000000000000000100")),  # an unknown value schema (v9)
        (b"\x01", h("0000")),  # a key too short to hold its type
        (commit_key("orders-app", "orders", 3), commit_value_v3(42, 5000, "", 2)),
    ])  # fmt: skip
    err = stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group)
    out = read_all(kafka, target, 1)
    seed = {"topic": "foo", "partition": 1, "group": "group-id", "offset": 100,
            "metadata": "metadata", "commitTimestamp": 1234, "expireTimestamp": None}  # fmt: skip
    rows = [orjson.loads(m.value()) for m in out]
    assert rows[:2] == [{**seed, "version": 0}, {**seed, "version": 4, "leaderEpoch": 10}]
    tombstone = rows[2]
    assert tombstone["tombstone"] is True and tombstone["offset"] is None
    assert tombstone["commitTimestamp"] > 1_700_000_000_000  # the tombstone's own time
    assert rows[3] == {"topic": "orders", "partition": 3, "group": "orders-app", "version": 3,
                       "offset": 42, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 5000,
                       "expireTimestamp": None}  # fmt: skip
    assert [m.key() for m in out] == [b"group-id/foo/1"] * 3 + [b"orders-app/orders/3"]
    assert dict(out[3].headers())[SOURCE_HEADER] == f"{source}/0/9".encode()
    assert "consumed 10, produced 3 commit(s) and 1 tombstone(s)" in err
    assert "skipped 1 own-group record(s)" in err
    assert "not produced: key type 3 x1, key type 99 x1, offset commit value v9 x1" in err
    assert "undecodable: key type 1 x1, no key type x1" in err
    # the same counts, as the job's Prometheus counters
    assert {r: skipped(r) - n for r, n in before.items()} == dict.fromkeys(before, 1.0)

    # run again: everything is committed, nothing is produced twice
    err = stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group)
    assert "consumed 0, produced 0" in err
    assert len(read_all(kafka, target, 1)) == 4


def commits(n: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(commit_key(f"g{i % 7}", "orders", i % 5), commit_value_v3(i, 1_700_000_000_000 + i))
            for i in range(start, start + n)]  # fmt: skip


def test_a_batch_whose_transaction_never_committed_is_never_seen(kafka):
    source, target = topics(kafka, 1, 3)
    produce(kafka, source, commits(30))
    group = f"sg-{uuid.uuid4().hex[:6]}"
    first = OffsetsStream(kafka.bootstrap_servers, source, target, group, batch=10)
    first.start()
    assert first.step(5) == 10  # one committed transaction
    # the crash: the next batch is produced and flushed inside a transaction that never commits
    first._producer.begin_transaction()
    for message in first._consumer.consume(10, timeout=5):
        first._handle(message)
    first._producer.flush(10)
    first._consumer.close()

    second = OffsetsStream(kafka.bootstrap_servers, source, target, group, batch=10)
    second.start()  # fences the first instance and aborts its transaction
    while second.step(1):
        pass
    second.close()
    assert second.stats.produced == 20
    sources = [dict(m.headers())[SOURCE_HEADER] for m in read_all(kafka, target, 3)]
    assert sorted(sources) == sorted(f"{source}/0/{i}".encode() for i in range(30))


def test_killed_mid_stream_and_restarted_produces_each_commit_once(kafka, capsys):
    source, target = topics(kafka, 2, 2)
    total = 20_000
    produce(kafka, source, commits(total))
    group = f"sg-{uuid.uuid4().hex[:6]}"
    argv = [sys.executable, "-m", "sprig", "consumer-offsets", "stream", "--bootstrap-server",
            kafka.bootstrap_servers, "--input-topic", source, "--topic", target, "--group", group,
            "--batch", "50"]  # fmt: skip
    job = subprocess.Popen(argv, stderr=subprocess.PIPE, env={**os.environ})
    try:
        # progress read from the group's committed input offsets (a cheap OffsetFetch, which
        # the job commits inside each batch's transaction), not by reading the output back
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = committed(kafka, group, source, 2)
            if done >= 300:
                break
            time.sleep(0.02)
        assert 0 < done < total, f"the job must be killed mid-stream ({done} of {total} done)"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(10)
    stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group,
           "--batch", "50")  # fmt: skip
    out = read_all(kafka, target, 2)
    sources = [dict(m.headers())[SOURCE_HEADER] for m in out]
    assert len(sources) == len(set(sources)) == total
