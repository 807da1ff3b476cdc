"""`sprig kafka-consumer-groups` against the session's Kafka: its output for groups that only
commit (`commit(offsets=...)` with a `group.id`, no membership; Kafka lists them Empty), the
option rules and the errors. tests/monitoring/test_real_consumer_offsets.py compares it line
by line with Kafka's own tool for groups with members."""

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring.kafka_admin import KafkaGroupReader
from sprig.cli import main

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(kafka, partitions: int, records_per_partition: int) -> str:
    topic = unique("orders")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for partition in range(partitions):
        for n in range(records_per_partition):
            producer.produce(topic, value=b"%d" % n, partition=partition)
    assert producer.flush(10) == 0
    return topic


def commit(kafka, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
         "enable.auto.commit": False}
    )  # fmt: skip
    try:
        request = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        consumer.commit(offsets=request, asynchronous=False)
    finally:
        consumer.close()


def run(kafka, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap_servers, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def billing(kafka):
    """A group that read 2 of 5 records on partition 0, all 5 on partition 1, and never
    committed partition 2."""
    topic = create_topic(kafka, partitions=3, records_per_partition=5)
    group = unique("bill")
    commit(kafka, group, {(topic, 0): 2, (topic, 1): 5})
    return group, topic


def test_describe_prints_each_committed_partition_with_end_offset_and_lag(kafka, capsys, billing):
    group, topic = billing
    code, out, err = run(kafka, capsys, "--describe", "--group", group)
    assert code == 0
    assert err == f"\nConsumer group '{group}' has no active members.\n"
    assert out == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n"
        f"{group:<15} {topic:<15} 0          2               5               3               -               -               -\n"
        f"{group:<15} {topic:<15} 1          5               5               0               -               -               -\n"
    )  # fmt: skip
    # --offsets is the default sub-action: same bytes.
    assert run(kafka, capsys, "--describe", "--group", group, "--offsets") == (0, out, err)


def test_verbose_describe_adds_the_leader_epoch_column(kafka, capsys, billing):
    group, topic = billing
    code, out, _ = run(kafka, capsys, "--describe", "--group", group, "--verbose")
    assert code == 0
    header, first, _ = out.splitlines()[1:]
    assert header.split()[:4] == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH"]
    # committed without a leader epoch (commit(offsets=...) names none), so it is unknown
    assert first.split()[:7] == [group, topic, "0", "-", "2", "5", "3"]


def test_sum_prints_the_total_lag_of_the_group(kafka, capsys, billing):
    group, _ = billing
    code, out, _ = run(kafka, capsys, "--describe", "--group", group, "--sum")
    assert code == 0
    assert out == (
        "\nGROUP           PARTITIONS      UNKNOWN-LAG     TOTAL-LAG\n"
        f"{group:<15} 2               0               3\n"
    )


def test_state_shows_the_coordinator_and_no_members(kafka, capsys, billing):
    group, _ = billing
    code, out, err = run(kafka, capsys, "--describe", "--group", group, "--state")
    assert code == 0
    assert err == f"\nConsumer group '{group}' has no active members.\n"
    header, row = out.splitlines()[1:]
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                              "#MEMBERS"]  # fmt: skip
    assert row.startswith(f"{group:<15} 127.0.0.1:{kafka.port}  (")
    assert row.split()[-3:] == ["-", "Empty", "0"]


def test_members_of_a_group_without_members_is_the_header_only(kafka, capsys, billing):
    group, _ = billing
    code, out, _ = run(kafka, capsys, "--describe", "--group", group, "--members")
    assert code == 0
    assert (
        out
        == "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
    )


def test_list_shows_the_group_and_with_state_a_table(kafka, capsys, billing):
    group, _ = billing
    code, out, _ = run(kafka, capsys, "--list")
    assert code == 0
    assert group in out.splitlines()
    code, out, _ = run(kafka, capsys, "--list", "--state")
    assert code == 0
    lines = out.splitlines()
    width = max(15, *(len(line.split()[0]) for line in lines[1:])) + 10
    assert lines[0] == f"{'GROUP':<{width}} {'STATE':<20}"
    assert any(line.startswith(f"{group:<{width}} ") for line in lines[1:])


def test_all_groups_describes_every_group_in_name_order(kafka, capsys):
    topic = create_topic(kafka, partitions=1, records_per_partition=3)
    first, second = "aa-" + unique("g"), "ab-" + unique("g")
    commit(kafka, second, {(topic, 0): 1})
    commit(kafka, first, {(topic, 0): 3})
    code, out, _ = run(kafka, capsys, "--describe", "--all-groups")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith(("aa-", "ab-"))]
    assert [row.split()[:6] for row in rows if topic in row] == [
        [first, topic, "0", "3", "3", "0"],
        [second, topic, "0", "1", "3", "2"],
    ]


def test_end_offset_of_a_partition_kafka_cannot_answer_for_is_unknown_not_an_error(kafka):
    # (a partition of a topic that is gone, or that has no leader now)
    topic = create_topic(kafka, partitions=1, records_per_partition=2)
    reader = KafkaGroupReader(kafka.bootstrap_servers, timeout_s=5)
    ends = reader.end_offsets([(topic, 0), ("no-such-topic-" + uuid.uuid4().hex[:6], 0)])
    assert sorted(ends.values(), key=str) == [2, None]


def test_unreachable_cluster_is_one_clear_error_with_exit_2(capsys):
    code = main(["kafka-consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--describe",
                 "--group", "g", "--timeout", "300"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(
        "sprig kafka-consumer-groups: could not describe the consumer group 'g' from Kafka at "
        "127.0.0.1:1 (timeout 300 ms)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Command must include exactly one action: --list, --describe"),
        (["--list", "--describe"], "Command must include exactly one action"),
        (["--describe"], "Option --describe takes one of these options: --all-groups, --group"),
        (["--describe", "--group", "g", "--members", "--state"], "at most one of these options"),
        (["--describe", "--group", "g", "--state", "stable"], "does not take a value for --state"),
        (["--describe", "--group", "g", "--members", "--sum"], "--sum goes with --offsets only"),
        (["--list", "--members"], "--members may be used with --describe only"),
        (["--list", "--verbose"], "--verbose may be used with --describe only"),
        (["--list", "--state", "stable,asleep"], "Invalid state list 'stable,asleep'"),
        (["--list", "--timeout", "0"], "--timeout must be a positive number"),
    ],
)
def test_option_rules_are_usage_errors(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["kafka-consumer-groups", "--bootstrap-server", "127.0.0.1:1", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_command_config_that_cannot_be_read_is_named(tmp_path, capsys):
    config = tmp_path / "missing.properties"
    code = main(["kafka-consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list",
                 "--command-config", str(config)])  # fmt: skip
    assert code == 2
    assert f"--command-config: cannot read {config}" in capsys.readouterr().err


def test_command_config_is_read_as_java_properties(tmp_path):
    from sprig.commands.kafka_consumer_groups import _properties

    config = tmp_path / "client.properties"
    config.write_text("# security\n! also a comment\nsecurity.protocol = PLAINTEXT\n"
                      "sasl.jaas.config: a \\\n  b\n")  # fmt: skip
    assert _properties(config) == {"security.protocol": "PLAINTEXT", "sasl.jaas.config": "a b"}


def test_the_verb_documents_itself(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["kafka-consumer-groups", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: sprig kafka-consumer-groups")
    for option in ("--list", "--describe", "--all-groups", "--members", "--state", "--sum"):
        assert option in out
