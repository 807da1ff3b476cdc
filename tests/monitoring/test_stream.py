"""`sprig consumer-offsets stream` against the session's Kafka-protocol broker. That broker has no
`__consumer_offsets`, so Kafka-format records (the shared vectors' layout) are produced into an
ordinary topic and the job reads that; the JSON topic it writes is read back."""

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
                         "fetch.wait.max.ms": 10})  # fmt: skip
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


def stream(kafka, capsys, *args: str) -> str:
    code = main(["consumer-offsets", "stream", "--bootstrap-server", kafka.bootstrap_servers,
                 "--until-idle", "2", *args])  # fmt: skip
    assert code == 0
    return capsys.readouterr().err


def test_commits_become_seed_json_and_other_records_are_skipped(kafka, capsys):
    source, target = topics(kafka, 1, 1)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    key = h("0001000867726f75702d69640003666f6f00000001")
    produce(kafka, source, [
        (key, h("0000000000000000006400086d6574616461746100000000000004d2")),  # v0
        (key, h("000400000000000000640000000a096d6574616461746100000000000004d200")),  # v4
        (commit_key(group, "in", 0), commit_value_v3(7, 99)),  # the job's own commit
        (key, None),  # tombstone
        (h("0003000867726f75702d6964"), h("0000")),  # KIP-848 record
        (key, h("0003ffff")),  # broken v3 value: counted, the stream goes on
        (commit_key("orders-app", "orders", 3), commit_value_v3(42, 5000, "", 2)),
    ])  # fmt: skip
    err = stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group)
    out = read_all(kafka, target, 1)
    seed = {"topic": "foo", "partition": 1, "group": "group-id", "offset": 100,
            "metadata": "metadata", "commitTimestamp": 1234, "expireTimestamp": None}  # fmt: skip
    assert [orjson.loads(m.value()) for m in out] == [
        {**seed, "version": 0},
        {**seed, "version": 4, "leaderEpoch": 10},
        {"topic": "orders", "partition": 3, "group": "orders-app", "version": 3, "offset": 42,
         "leaderEpoch": 2, "metadata": "", "commitTimestamp": 5000, "expireTimestamp": None},
    ]  # fmt: skip
    assert [m.key() for m in out] == [b"group-id/foo/1", b"group-id/foo/1", b"orders-app/orders/3"]
    assert dict(out[2].headers())[SOURCE_HEADER] == f"{source}/0/6".encode()
    assert "consumed 7, produced 3" in err
    assert "1 own-group commit(s), 0 already produced, 2 other record(s), 1 undecodable" in err

    # run again: everything is committed, nothing is produced twice
    err = stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group)
    assert "consumed 0, produced 0" in err
    assert len(read_all(kafka, target, 1)) == 3


def commits(n: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(commit_key(f"g{i % 7}", "orders", i % 5), commit_value_v3(i, 1_700_000_000_000 + i))
            for i in range(start, start + n)]  # fmt: skip


def test_a_batch_flushed_but_not_committed_is_not_produced_again(kafka):
    source, target = topics(kafka, 1, 3)
    produce(kafka, source, commits(30))
    group = f"sg-{uuid.uuid4().hex[:6]}"
    first = OffsetsStream(kafka.bootstrap_servers, source, target, group, batch=10)
    first.start()
    assert first.step(5) == 10  # consumed, produced, flushed and committed
    # the crash: the next batch is produced and flushed, the process dies before the commit
    for message in first._consumer.consume(10, timeout=5):
        first._handle(message)
    first._flush()
    first._consumer.close()

    second = OffsetsStream(kafka.bootstrap_servers, source, target, group, batch=10)
    second.start()
    while second.step(1):
        pass
    second.close()
    assert second.stats.duplicates == 10
    assert second.stats.produced == 10
    sources = [dict(m.headers())[SOURCE_HEADER] for m in read_all(kafka, target, 3)]
    assert sorted(sources) == sorted(f"{source}/0/{i}".encode() for i in range(30))


def test_killed_mid_stream_and_restarted_produces_each_commit_once(kafka, capsys):
    source, target = topics(kafka, 2, 2)
    total = 6000
    produce(kafka, source, commits(total))
    group = f"sg-{uuid.uuid4().hex[:6]}"
    argv = [sys.executable, "-m", "sprig", "consumer-offsets", "stream", "--bootstrap-server",
            kafka.bootstrap_servers, "--input-topic", source, "--topic", target, "--group", group,
            "--batch", "50"]  # fmt: skip
    job = subprocess.Popen(argv, stderr=subprocess.PIPE, env={**os.environ})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = len(read_all(kafka, target, 2))
            if done >= 300:
                break
            time.sleep(0.05)
        assert 0 < done < total, "the job must be killed mid-stream"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(10)
    stream(kafka, capsys, "--input-topic", source, "--topic", target, "--group", group,
           "--batch", "50")  # fmt: skip
    out = read_all(kafka, target, 2)
    sources = [dict(m.headers())[SOURCE_HEADER] for m in out]
    assert len(sources) == len(set(sources)) == total
