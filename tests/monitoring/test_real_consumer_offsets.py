"""Consumer-offset monitoring against Kafka itself, for real groups (tests/monitoring/
real_groups.py: classic with subscribe(), the new consumer protocol, a non-ASCII name, one
deleted with delete_consumer_groups), checked against Kafka's own kafka-consumer-groups
(ConsumerGroupCommand of the same version, run here):

- `sprig kafka-consumer-groups` prints what Kafka's tool prints for --list, --describe --group,
  --describe --all-groups, --members and --state, line by line (padding and the member's
  CONSUMER-ID, HOST and CLIENT-ID values aside);
- the stream job reads Kafka's own `__consumer_offsets` (all 50 partitions) into the
  `consumer_offsets` REALTIME table, whose latest offset per group, topic and partition is
  what Kafka's tool prints, and Burrow's lag from that history is the tool's LAG.

The session's Kafka also holds other tests' groups; --all-groups is compared for this test's
groups, and the other groups must merely be the same set on both sides (their states move on
their own timers between the two runs)."""

from __future__ import annotations

import io
import time
import uuid
from contextlib import redirect_stderr, redirect_stdout

import pytest

from monitoring import history, tables
from monitoring.stream import OffsetsStream
from sprig.cli import main
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.monitoring.kafka_tool import blocks, groups_of, kafka_consumer_groups, only
from tests.monitoring.real_groups import RealGroups

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def groups(kafka):
    running = RealGroups.start(kafka.bootstrap_servers)
    yield running
    running.close()


def ours(bootstrap: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        main(["kafka-consumer-groups", "--bootstrap-server", bootstrap, *args])
    return out.getvalue(), err.getvalue()


def test_kafka_consumer_groups_prints_what_kafkas_tool_prints(kafka, groups):
    bootstrap = kafka.bootstrap_servers
    mine = {*groups.live}
    # --list: the same groups (in the broker's order, which the two clients do not keep alike)
    theirs_out, _ = kafka_consumer_groups(bootstrap, "--list")
    our_out, _ = ours(bootstrap, "--list")
    assert sorted(our_out.splitlines()) == sorted(theirs_out.splitlines())
    assert mine <= set(our_out.splitlines()) and groups.deleted not in our_out

    named = [arg for group in groups.live for arg in ("--group", group)]
    for args in (["--describe"], ["--describe", "--members"], ["--describe", "--state"]):
        theirs = kafka_consumer_groups(bootstrap, *args, *named)
        got = ours(bootstrap, *args, *named)
        assert sorted(blocks(got[0])) == sorted(blocks(theirs[0])), (args, got, theirs)
        assert len(blocks(got[0])) == 3
        assert got[1] == theirs[1], args
        theirs_out, _ = kafka_consumer_groups(bootstrap, *args, "--all-groups")
        our_out, _ = ours(bootstrap, *args, "--all-groups")
        assert only(blocks(our_out), mine) == only(blocks(theirs_out), mine), args
        assert len(only(blocks(our_out), mine)) == 3
        assert sorted(groups_of(blocks(our_out))) == sorted(groups_of(blocks(theirs_out)))

    # a deleted group: Kafka 4's error line, word for word
    theirs_out, _ = kafka_consumer_groups(bootstrap, "--describe", "--group", groups.deleted)
    our_out, _ = ours(bootstrap, "--describe", "--group", groups.deleted)
    assert our_out == theirs_out
    assert "GroupIdNotFoundException: Group " in our_out


def describe_offsets(bootstrap: str, group_ids: list[str]) -> dict[tuple, tuple[int, int]]:
    """(group, topic, partition) -> (CURRENT-OFFSET, LAG) from Kafka's tool, committed rows."""
    rows = {}
    out, _ = kafka_consumer_groups(bootstrap, "--describe",
                                   *[a for g in group_ids for a in ("--group", g)])  # fmt: skip
    for table in blocks(out):
        for row in table[1:]:
            if row[3] != "-":
                rows[(row[0], row[1], int(row[2]))] = (int(row[3]), int(row[5]))
    return rows


@pytest.fixture
def lag_table(zookeeper, kafka, tmp_path):
    """A one-server cluster with the consumer_offsets table on a topic of this test's own."""
    topic = create_topic(kafka.bootstrap_servers, f"offsets-json-{uuid.uuid4().hex[:8]}", 1)
    cluster = start_cluster(zookeeper.address, tmp_path, servers=1)
    try:
        assert cluster.controller("POST", "/schemas", json=tables.schema()).ok
        config = tables.table_config(kafka.bootstrap_servers, topic)
        response = cluster.controller("POST", "/tables", json=config)
        assert response.ok, response.text
        yield cluster, topic
    finally:
        stop_cluster(cluster)


def latest_offsets(cluster, group_ids: list[str]) -> dict[tuple, int | None]:
    names = ", ".join("'" + g.replace("'", "''") + "'" for g in group_ids)
    sql = (f'{history.NULLS}SELECT "group", topic, "partition", "offset", commitTimestamp '
           f'FROM {tables.TABLE_NAME} WHERE "group" IN ({names}) LIMIT 100000')  # fmt: skip
    # with null handling on, a tombstone's offset reads back as null, from committed and
    # consuming segments alike
    rows = history.rows_of(cluster.query(sql))
    latest: dict[tuple, tuple] = {}
    for row in rows:
        key = (row["group"], row["topic"], int(row["partition"]))
        # a tombstone (null offset) comes after the commits it deletes
        order = (int(row["commitTimestamp"]), row["offset"] is None, row["offset"] or 0)
        if key not in latest or order > latest[key][0]:
            latest[key] = (order, row["offset"])
    return {key: offset for key, (_, offset) in latest.items()}


def test_the_stream_job_fills_the_table_from_kafkas_own_consumer_offsets(kafka, groups, lag_table):
    cluster, topic = lag_table
    bootstrap = kafka.bootstrap_servers
    job = OffsetsStream(bootstrap, output_topic=topic, group_id=f"offsets-{uuid.uuid4().hex[:6]}")
    job.start()
    try:
        assert len(job._assigned) == 50  # every partition of Kafka's __consumer_offsets
        idle = time.monotonic()
        while time.monotonic() - idle < 3:
            if job.step(0.5):
                idle = time.monotonic()
    finally:
        job.close()
    assert job.stats.undecodable == {}
    assert job.stats.produced > 0 and job.stats.tombstones >= 1

    expected = describe_offsets(bootstrap, groups.live)
    assert {k[0] for k in expected} == set(groups.live)
    everyone = [*groups.live, groups.deleted]

    want = {k: v for k, (v, _) in expected.items()}
    seen = {}

    def matches():
        seen["latest"] = latest = latest_offsets(cluster, everyone)
        committed = {k: v for k, v in latest.items() if v is not None}
        return committed == want and latest

    try:
        latest = wait_until(matches, "the table's latest offsets to equal Kafka's tool", 90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: the table has {seen.get('latest')}, Kafka {want}") from None
    # the deleted group: its only partition's latest row is the tombstone
    assert latest[(groups.deleted, groups.topic, 0)] is None

    # Burrow's lag from this history and Kafka's answer now is the tool's LAG
    for group in groups.live:
        body = cluster.controller("GET", f"/v3/kafka/local/consumer/{group}/lag").json()
        assert body["error"] is False, body
        got = {(group, p["topic"], p["partition"]): p["current_lag"]
               for p in body["status"]["partitions"]}  # fmt: skip
        assert got == {k: lag for k, (_, lag) in expected.items() if k[0] == group}
        assert body["status"]["status"] in ("OK", "WARN", "ERR")
