"""Upsert and dedup tables end to end (issue 24.10): a controller, two servers, a broker and a
minion with Spark as processes, the session's Kafka and Redis, and a generated change stream of
200,000 events over 20,000 keys in 4 partitions read by a FULL table (deletes, deletedKeysTTL,
snapshots with preload, 2 replicas) and a PARTIAL one (every strategy). Every answer (COUNT,
SUM, every key's row, GROUP BY, and skipUpsert) equals the reference model after consumption,
after commits, after a server SIGKILLed mid-consumption and restarted, and (FULL table) after
UpsertCompactionTask rewrote or deleted committed segments on the minion. The dedup table gets
the first three check points; Pinot has no compaction for dedup."""

from __future__ import annotations

import signal
import time
import types
import uuid

import pytest

from sprig.stack.cluster import minion_process
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.cluster_e2e.upsert_stream import (
    STRATEGIES,
    ChangeStream,
    DedupAt,
    check_dedup,
    check_full,
    check_partial,
    dedup_models,
    drop_compacted,
    events,
    full_models,
    partial_models,
    schema,
    stored,
    table,
    wait_consumed,
)
from tests.engine.upsert.test_compaction_replace import CompactedModel
from tests.tasks.conftest import TaskCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEGMENT_ROWS = 12_500
DELETED_TTL = 300
COMPACTION = "UpsertCompactionTask"
COMPACTIONS = 4  # tableMaxNumTasks: one Spark job each, on a local[1] minion
# IN_MEMORY: the bitmaps the servers hold when the task reads them, so the model (whose current
# versions are read at the same quiet moment) says exactly which docs compaction keeps; a
# SNAPSHOT bitmap is as of the last commit, and would keep docs superseded since.
COMPACTION_CONFIG = {"bufferTimePeriod": "0d", "invalidRecordsThresholdPercent": "0",
                     "invalidRecordsThresholdCount": "1", "validDocIdsType": "IN_MEMORY",
                     "tableMaxNumTasks": str(COMPACTIONS)}  # fmt: skip


@pytest.fixture
def upsert_cluster(zookeeper, kafka, redis_server, tmp_path):
    """The realtime cluster (controller, two servers, a broker) plus one minion with a
    prewarmed local[1] SparkSession, on a Redis database of its own (the minion warms Spark
    while the stream is consumed)."""
    redis = redis_server.url.rsplit("/", 1)[0] + "/10"
    running = start_cluster(zookeeper.address, tmp_path, servers=2, extra_env={
        "SPRIG_REDIS_URL": redis, "SPRIG_TASK_DRIVER_INTERVAL_S": "0.2"})  # fmt: skip
    minion = minion_process(tmp_path, {**running.env, "SPRIG_DATA_DIR": str(tmp_path / "minion"),
                                       "SPRIG_MINION_SPARK_PREWARM": "true",
                                       "SPRIG_SPARK_MASTER": "local[1]",
                                       "SPRIG_SPARK_DRIVER_MEMORY": "1g"})  # fmt: skip
    try:
        minion.start()
        minion.wait_ready()
        yield running
    finally:
        minion.stop()
        stop_cluster(running)


def online_segments(cluster, name: str) -> int:
    ideal = cluster.controller("GET", f"/tables/{name}/idealstate").json().get("REALTIME") or {}
    return sum(1 for m in ideal.values() if set(m.values()) == {"ONLINE"})


def create(cluster, name: str, body_schema: dict, body_table: dict) -> None:
    for path, body in (("/schemas", body_schema), ("/tables", body_table)):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"


def test_upsert_tables_match_the_model(upsert_cluster, kafka):
    cluster = upsert_cluster
    bootstrap = kafka.bootstrap_servers
    topic = create_topic(bootstrap, f"changes_{uuid.uuid4().hex[:8]}", partitions=4)
    full = full_models(SEGMENT_ROWS, DELETED_TTL)
    partial = partial_models(SEGMENT_ROWS)
    stream = ChangeStream(bootstrap, topic, {"full": full, "partial": partial})
    create(cluster, "changes", schema("changes"), table(
        "changes", bootstrap, topic, SEGMENT_ROWS, 2,
        upsertConfig={"mode": "FULL", "deleteRecordColumn": "deleted",
                      "deletedKeysTTL": DELETED_TTL, "snapshot": "ENABLE", "preload": "ENABLE"},
        task={"taskTypeConfigsMap": {COMPACTION: COMPACTION_CONFIG}},
    ))  # fmt: skip
    create(cluster, "profiles", schema("profiles", partial=True), table(
        "profiles", bootstrap, topic, SEGMENT_ROWS, 1,
        upsertConfig={"mode": "PARTIAL", "partialUpsertStrategies": STRATEGIES,
                      "defaultPartialUpsertStrategy": "OVERWRITE", "deleteRecordColumn": "deleted"},
    ))  # fmt: skip
    url = cluster.broker_url
    produced = events(200_000, 20_000, seed=24)

    def settle() -> None:
        wait_consumed(url, "changes", len(stored(full)))
        wait_consumed(url, "profiles", len(stored(partial)))
        check_full(url, "changes", full)
        check_partial(url, "profiles", partial)

    # 1. consumed, nothing committed yet (7,500 rows a partition)
    stream.produce(produced[:30_000])
    settle()
    assert online_segments(cluster, "changes") == 0
    # 2. past the first flush point: each partition commits once
    stream.produce(produced[30_000:70_000])
    wait_until(lambda: online_segments(cluster, "changes") == 4, "4 commits of changes", 120)
    wait_until(lambda: online_segments(cluster, "profiles") == 4, "4 commits of profiles", 120)
    settle()
    # 3. a server SIGKILLed mid-consumption, restarted: it rebuilds its metadata (from
    # snapshots for the FULL table) and consumes its segments again
    victim = next(iter(cluster.servers.values()))
    stream.produce(produced[70_000:120_000])
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)
    time.sleep(1.0)
    victim.start()
    victim.wait_ready()
    settle()
    # 4. the rest: each partition commits every full segment it holds (with this seed partition
    # 0 gets 49,638 events, 3 commits, the others 4: 15). Waiting for 12 was a race: it held
    # only until the last commits, which a slow producer (a busy machine) let pass unseen.
    stream.produce(produced[120_000:])
    commits = sum(rows // SEGMENT_ROWS for rows in stream.offsets)
    wait_until(lambda: online_segments(cluster, "changes") == commits,
               f"{commits} commits of changes", 180)  # fmt: skip
    settle()
    assert sum(m.model.deleted_purged for m in full) > 0  # deletedKeysTTL expired some keys
    # 5. UpsertCompactionTask on the minion rewrites (or deletes) committed segments
    compact_and_check(cluster, full, partial)


def compact_and_check(cluster, full: list, partial: list) -> None:
    """One UpsertCompactionTask run on ``changes`` (the stream is quiet), then every answer
    equals the model again. skipUpsert is exact too: it counts the consuming segments' rows,
    the untouched committed segments' rows and, of each compacted segment, only the versions
    that were their keys' current ones (tombstones included) when the task read the bitmaps;
    a deleted segment (every doc superseded) counts none."""
    compacted = [CompactedModel(m.model) for m in full]
    current = [c.current() for c in compacted]
    tasks = TaskCluster(cluster.controller_url, cluster.broker_url, [], cluster.env[
        "SPRIG_CLUSTER_NAME"])  # fmt: skip
    infos = tasks.run_task(COMPACTION, "changes_REALTIME", timeout_s=900)["subtaskInfos"]
    # every segment is most of it superseded, so the task takes the most invalid four, and
    # both replicas agree on each (EQUAL consensus), or it would have skipped the segment
    assert len(infos) == COMPACTIONS, infos
    assert {i["state"] for i in infos} == {"COMPLETED"}, infos
    drop_compacted(compacted, infos, current, SEGMENT_ROWS)
    models = [types.SimpleNamespace(model=c) for c in compacted]
    assert len(stored(models)) < len(stored(full))
    url = cluster.broker_url
    wait_consumed(url, "changes", len(stored(models)))  # both replicas serve the new copies
    check_full(url, "changes", models)
    check_partial(url, "profiles", partial)


DEDUP_ROWS = 2_000  # a partition keeps about 5,000 first rows of 20,000 keys: 2 commits each


def test_dedup_table_keeps_first_rows(realtime_cluster, kafka):
    """The same stream (200,000 events over 20,000 keys, 4 partitions) into a dedup table with
    2 replicas: every answer equals the model after consumption, after the first commits, after
    a server SIGKILLed mid-consumption and restarted, and after every commit. Most events
    repeat a key, so near each flush point most messages yield no row."""
    cluster = realtime_cluster
    bootstrap = kafka.bootstrap_servers
    topic = create_topic(bootstrap, f"clicks_{uuid.uuid4().hex[:8]}", partitions=4)
    models = [DedupAt(m) for m in dedup_models(0)]
    stream = ChangeStream(bootstrap, topic, {"dedup": models})
    create(cluster, "visits", schema("visits"), table(
        "visits", bootstrap, topic, DEDUP_ROWS, 2, dedupConfig={"dedupEnabled": True}))  # fmt: skip
    produced = events(200_000, 20_000, seed=3)
    url = cluster.broker_url

    def settle() -> None:
        wait_consumed(url, "visits", sum(len(m.model.kept) for m in models))
        check_dedup(url, "visits", models)

    def commits(n: int) -> None:
        wait_until(lambda: online_segments(cluster, "visits") == n, f"{n} commits", 180)

    # 1. consumed, nothing committed (about 1,300 first rows a partition)
    stream.produce(produced[:6_000])
    settle()
    assert online_segments(cluster, "visits") == 0
    # 2. past the first flush point: one commit a partition
    stream.produce(produced[6_000:30_000])
    commits(4)
    settle()
    # 3. a server SIGKILLed mid-consumption and restarted: it rebuilds its keys from its
    # segments and consumes again; the second flush point passes meanwhile
    victim = next(iter(cluster.servers.values()))
    stream.produce(produced[30_000:120_000])
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)
    victim.start()
    victim.wait_ready()
    settle()
    # 4. the rest: duplicates of keys in committed segments never show
    stream.produce(produced[120_000:])
    commits(8)
    settle()
    assert sum(len(m.model.kept) for m in models) == len({r["id"] for r in produced})
