"""`sprig consumer-offsets decode` (hex pairs on stdin -> JSON lines) and `sample --once`."""

import io
import json
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sprig.cli import main

KEY = "0001000867726f75702d69640003666f6f00000001"
V3 = "000300000000000000640000000a00086d6574616461746100000000000004d2"
V4 = "000400000000000000640000000a096d6574616461746100000000000004d200"


def decode(monkeypatch, capsys, text):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["consumer-offsets", "decode"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_decode_prints_one_json_object_per_record(monkeypatch, capsys):
    text = f"{KEY} {V3}\n\n{KEY} {V4}\n{KEY}\n0003000867726f75702d6964 0000\n"
    code, out, err = decode(monkeypatch, capsys, text)
    assert code == 0
    lines = out.splitlines()
    assert json.loads(lines[0]) == {
        "topic": "foo", "partition": 1, "group": "group-id", "version": 3, "offset": 100,
        "leaderEpoch": 10, "metadata": "metadata", "commitTimestamp": 1234,
        "expireTimestamp": None,
    }  # fmt: skip
    assert lines[0].startswith('{"topic":"foo","partition":1,"group":"group-id","version":3,')
    assert json.loads(lines[1])["version"] == 4
    assert json.loads(lines[2]) == {"topic": "foo", "partition": 1, "group": "group-id",
                                    "tombstone": True}  # fmt: skip
    assert len(lines) == 3
    assert err == "skipped 1 record(s): key type 3 x1\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{KEY} {V3}\nzz {V3}\n", "line 2: not hexadecimal: 'zz"),
        (f"{KEY} {V3} 00\n", "line 1: expected 'KEY_HEX [VALUE_HEX]', got 3 fields"),
        (f"{KEY} 0003000000\n", "line 1: offset commit value v3: cannot read field 'offset'"),
    ],
)
def test_decode_names_the_bad_line(monkeypatch, capsys, text, message):
    code, _, err = decode(monkeypatch, capsys, text)
    assert code == 2
    assert message in err


@pytest.mark.integration
def test_sample_once_produces_the_groups_lag(kafka, capsys):
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    source, target = f"src-{uuid.uuid4().hex[:6]}", f"samples-{uuid.uuid4().hex[:6]}"
    for topic in (source, target):
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=10)
    group = f"cli-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(source, 0, 0)], asynchronous=False)
    consumer.close()
    code = main(["consumer-offsets", "sample", "--bootstrap-server", kafka.bootstrap_servers,
                 "--topic", target, "--groups", group, "--once"])  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out == f"produced 1 lag sample(s) to {target}\n"


def test_sample_rejects_a_non_positive_interval(capsys):
    code = main(["consumer-offsets", "sample", "--bootstrap-server", "127.0.0.1:1",
                 "--interval", "0"])  # fmt: skip
    assert code == 2
    assert "--interval must be a positive number of seconds, got 0.0" in capsys.readouterr().err
