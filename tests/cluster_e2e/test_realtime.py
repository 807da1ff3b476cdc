"""Real-time ingestion end to end: a REALTIME table over a 2-partition topic on the local
Kafka, a controller, two servers and a broker as separate processes.

Rows are counted through the broker as soon as they are consumed (before any commit); past
the row target the segments commit through the completion protocol and the committed
segments replace the consuming ones with nothing lost or counted twice; a restarted server
consumes its partition again from the segment's start offset."""

from __future__ import annotations

import signal
import time
import uuid

import orjson
import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.cluster_e2e.realtime_helpers import (
    ROWS_PER_SEGMENT,
    TABLE,
    Stream,
    create_table,
    create_topic,
    ideal_state,
    new_topic,
    run_periodic_task,
    wait_consuming_segments,
    wait_totals,
    wait_until,
)

pytestmark = pytest.mark.integration


def wait_segments(cluster, online: int, replicas: int, timeout_s: float = 60) -> dict:
    """Until ``online`` segments are ONLINE on ``replicas`` servers in the external view, and
    one CONSUMING segment per partition."""
    deadline = time.monotonic() + timeout_s
    view = {}
    while time.monotonic() < deadline:
        view = cluster.controller("GET", f"/tables/{TABLE}/externalview").json()["REALTIME"] or {}
        done = [s for s, m in view.items() if set(m.values()) == {"ONLINE"} and len(m) == replicas]
        consuming = [s for s, m in view.items() if set(m.values()) == {"CONSUMING"}]
        if len(done) == online and len(consuming) == 2:
            return view
        time.sleep(0.3)
    raise AssertionError(f"expected {online} ONLINE segments on {replicas} servers: {view}")


def test_consume_commit_and_restart(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    stream.produce(60)  # 30 per partition: below the row target
    create_table(cluster, kafka, topic)
    ideal = wait_consuming_segments(cluster, 2)
    assert sorted(s.split("__")[:3] for s in ideal) == [[TABLE, "0", "0"], [TABLE, "1", "0"]]
    assert all(set(m.values()) == {"CONSUMING"} and len(m) == 1 for m in ideal.values())
    # each partition on its own server
    assert len({next(iter(m)) for m in ideal.values()}) == 2

    # queryable at once, before any commit
    wait_totals(cluster, stream.count, stream.total)
    infos = []
    for server in cluster.servers.values():
        admin_port = server.argv[server.argv.index("--admin-port") + 1]
        url = f"http://127.0.0.1:{admin_port}/tables/{TABLE}/consumingSegmentsInfo"
        infos += requests.get(url, timeout=10).json()
    assert sorted(i["segmentName"] for i in infos) == sorted(ideal)
    for info in infos:
        partition = info["segmentName"].split("__")[1]
        assert info["consumerState"] == "CONSUMING"
        assert info["partitionToOffsetMap"] == {partition: "30"}
        assert info["partitionOffsetInfo"]["recordsLagMap"] == {partition: "0"}
        assert info["rowsWithErrors"] == 0
    assert all(set(m.values()) == {"CONSUMING"} for m in ideal_state(cluster).values())

    # past the row target: each partition commits twice (100, 200) and keeps consuming
    stream.produce(400)  # 230 per partition
    wait_totals(cluster, stream.count, stream.total)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ideal = ideal_state(cluster)
        online = [s for s, m in ideal.items() if set(m.values()) == {"ONLINE"}]
        if len(online) == 4:
            break
        time.sleep(0.3)
    assert len(online) == 4, ideal
    consuming = sorted(s for s, m in ideal.items() if set(m.values()) == {"CONSUMING"})
    assert [s.split("__")[1:3] for s in consuming] == [["0", "2"], ["1", "2"]]
    wait_totals(cluster, stream.count, stream.total)

    # a server SIGKILLed mid-segment (30 rows consumed, not committed) consumes its
    # partition again from the segment's start offset: 0 lost, 0 duplicated
    server = next(iter(cluster.servers.values()))
    server.popen.send_signal(signal.SIGKILL)
    server.popen.wait(10)
    stream.produce(50)  # produced while it is down
    server.start()
    server.wait_ready()
    wait_totals(cluster, stream.count, stream.total)
    stream.produce(200)  # and it commits again after the restart
    wait_totals(cluster, stream.count, stream.total)
    wait_segments(cluster, online=6, replicas=1)


def test_two_replicas_agree_through_the_completion_protocol(realtime_cluster, kafka):
    """Both servers consume both partitions; for each segment the controller picks one
    committer (the first to reach the row target wins at once), and the other replica
    serves its consuming copy until the committed one replaces it. Every committed segment
    ends ONLINE on both servers with the row target and offsets in ZooKeeper, and the totals
    through the broker are exact, also when the controller restarts meanwhile."""
    cluster = realtime_cluster
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    create_table(cluster, kafka, topic, replicas=2)
    ideal = wait_consuming_segments(cluster, 2)
    assert all(len(m) == 2 for m in ideal.values()), ideal
    stream.produce(40)
    wait_totals(cluster, stream.count, stream.total)
    for _ in range(3):  # in steps, so the replicas reach the target at different times
        stream.produce(150)
    wait_totals(cluster, stream.count, stream.total)  # 490: 245 per partition
    wait_segments(cluster, online=4, replicas=2)
    metadata = cluster.controller("GET", f"/segments/{TABLE}_REALTIME/zkmetadata").json()
    done = {s: m for s, m in metadata.items() if m.get("segment.realtime.status") == "DONE"}
    assert len(done) == 4, metadata
    for segment, meta in done.items():
        sequence = int(segment.split("__")[2])
        assert int(meta["segment.total.docs"]) == ROWS_PER_SEGMENT, (segment, meta)
        assert meta["segment.realtime.startOffset"] == str(sequence * ROWS_PER_SEGMENT)
        assert meta["segment.realtime.endOffset"] == str((sequence + 1) * ROWS_PER_SEGMENT)
    wait_totals(cluster, stream.count, stream.total)

    # the replicas reach the row target while no controller runs: they hold and ask again
    # until the restarted controller (FSMs rebuilt from ZooKeeper) lets one commit
    cluster.controller_process.stop()
    stream.produce(200)  # 345 per partition: a third commit each
    time.sleep(2.0)
    cluster.controller_process.start()
    cluster.controller_process.wait_ready()
    wait_segments(cluster, online=6, replicas=2, timeout_s=90)
    wait_totals(cluster, stream.count, stream.total)


def test_topic_created_after_the_table(realtime_cluster, kafka):
    """A table whose topic does not exist yet is created without segments (the controller
    logs why); once the topic exists, RealtimeSegmentValidationManager (run through
    /periodictask/run) creates one CONSUMING segment per partition from the smallest offset,
    so rows produced before it ran are not lost; and again for a partition added to the topic
    later."""
    cluster = realtime_cluster
    topic = f"clicks_{uuid.uuid4().hex[:8]}"
    create_table(cluster, kafka, topic)
    time.sleep(1.0)
    assert ideal_state(cluster) == {}
    log = (cluster.workdir / "controller" / "controller.log").read_text()
    assert f"topic '{topic}' does not exist" in log

    create_topic(kafka.bootstrap_servers, topic)
    stream = Stream(kafka.bootstrap_servers, topic)
    stream.produce(30)
    run = cluster.controller(
        "GET", "/periodictask/run",
        params={"taskname": "RealtimeSegmentValidationManager", "tableName": TABLE},
    )  # fmt: skip
    assert run.ok, run.text
    ideal = wait_consuming_segments(cluster, 2)
    assert sorted(s.split("__")[1:3] for s in ideal) == [["0", "0"], ["1", "0"]]
    wait_totals(cluster, stream.count, stream.total)

    # malformed messages are skipped and counted; consumption goes on
    for bad in (b"{not json", orjson.dumps({"user": "x", "n": "many", "ts": 1}), b"[1, 2]"):
        stream.producer.produce(topic, bad, partition=0)
    stream.produce(10)
    wait_totals(cluster, stream.count, stream.total)
    errors = 0
    for server in cluster.servers.values():
        admin_port = server.argv[server.argv.index("--admin-port") + 1]
        url = f"http://127.0.0.1:{admin_port}/tables/{TABLE}/consumingSegmentsInfo"
        errors += sum(i["rowsWithErrors"] for i in requests.get(url, timeout=10).json())
    assert errors == 3
    consumed = dropped = 0
    for server in cluster.servers.values():
        admin_port = server.argv[server.argv.index("--admin-port") + 1]
        text = requests.get(f"http://127.0.0.1:{admin_port}/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("sprig_server_realtime_rows_consumed_total{"):
                consumed += float(line.rsplit(" ", 1)[1])
            elif line.startswith("sprig_server_realtime_rows_dropped_total{"):
                dropped += float(line.rsplit(" ", 1)[1])
            elif line.startswith("sprig_server_realtime_ingestion_delay_ms{"):
                assert float(line.rsplit(" ", 1)[1]) >= 0
    assert (consumed, dropped) == (stream.count, 3)

    # partitions added while the topic is consumed: the validation manager gives the new one
    # a CONSUMING segment from its smallest offset, so the rows produced before it ran count
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(10)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    wait_until(lambda: len(producer.list_topics(topic, timeout=5).topics[topic].partitions) == 3,
               "the producer to see the new partition")  # fmt: skip
    for i in range(12):
        value = 1000 + i
        record = {"user": "new", "n": value, "ts": 1_700_000_100_000 + i}
        producer.produce(topic, orjson.dumps(record), partition=2)
        stream.count, stream.total = stream.count + 1, stream.total + value
    assert producer.flush(10) == 0
    run_periodic_task(cluster, "RealtimeSegmentValidationManager")
    ideal = wait_consuming_segments(cluster, 3)
    assert sorted(s.split("__")[1:3] for s in ideal) == [["0", "0"], ["1", "0"], ["2", "0"]]
    wait_totals(cluster, stream.count, stream.total)
