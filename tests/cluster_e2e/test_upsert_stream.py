"""Upsert and dedup tables end to end (issue 24.10): a controller, two servers and a broker as
processes, the session's Kafka, and a generated change stream of 200,000 events over 20,000
keys in 4 partitions read by a FULL table (deletes, deletedKeysTTL, snapshots with preload, 2
replicas) and a PARTIAL one (every strategy). Every answer equals the reference model after
consumption, after commits, after a server SIGKILLed mid-consumption and restarted, and after
UpsertCompactionTask rewrote the committed segments."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.cluster_e2e.upsert_stream import (
    STRATEGIES,
    ChangeStream,
    DedupAt,
    check_dedup,
    check_full,
    check_partial,
    dedup_models,
    events,
    full_models,
    partial_models,
    schema,
    stored,
    table,
    wait_consumed,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEGMENT_ROWS = 12_500
DELETED_TTL = 300


def online_segments(cluster, name: str) -> int:
    ideal = cluster.controller("GET", f"/tables/{name}/idealstate").json().get("REALTIME") or {}
    return sum(1 for m in ideal.values() if set(m.values()) == {"ONLINE"})


def create(cluster, name: str, body_schema: dict, body_table: dict) -> None:
    for path, body in (("/schemas", body_schema), ("/tables", body_table)):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"


def test_upsert_tables_match_the_model(realtime_cluster, kafka):
    cluster = realtime_cluster
    bootstrap = kafka.bootstrap_servers
    topic = create_topic(bootstrap, f"changes_{uuid.uuid4().hex[:8]}", partitions=4)
    full = full_models(SEGMENT_ROWS, DELETED_TTL)
    partial = partial_models(SEGMENT_ROWS)
    stream = ChangeStream(bootstrap, topic, {"full": full, "partial": partial})
    create(cluster, "changes", schema("changes"), table(
        "changes", bootstrap, topic, SEGMENT_ROWS, 2,
        upsertConfig={"mode": "FULL", "deleteRecordColumn": "deleted",
                      "deletedKeysTTL": DELETED_TTL, "snapshot": "ENABLE", "preload": "ENABLE"},
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
    # 4. the rest, with more commits on the way
    stream.produce(produced[120_000:])
    wait_until(lambda: online_segments(cluster, "changes") == 12, "12 commits of changes", 180)
    settle()
    assert sum(m.model.deleted_purged for m in full) > 0  # deletedKeysTTL expired some keys


def test_dedup_table_keeps_first_rows(realtime_cluster, kafka):
    cluster = realtime_cluster
    bootstrap = kafka.bootstrap_servers
    topic = create_topic(bootstrap, f"clicks_{uuid.uuid4().hex[:8]}", partitions=4)
    models = [DedupAt(m) for m in dedup_models(0)]
    stream = ChangeStream(bootstrap, topic, {"dedup": models})
    create(cluster, "visits", schema("visits"), table(
        "visits", bootstrap, topic, 5_000, 2, dedupConfig={"dedupEnabled": True}))  # fmt: skip
    produced = events(50_000, 5_000, seed=3)
    url = cluster.broker_url
    kept = sum(len(m.model.kept) for m in models)

    def kept_count() -> int:
        return sum(len(m.model.kept) for m in models)

    stream.produce(produced[:30_000])
    wait_consumed(url, "visits", kept_count())
    check_dedup(url, "visits", models)
    victim = next(iter(cluster.servers.values()))
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)
    stream.produce(produced[30_000:])
    victim.start()
    victim.wait_ready()
    wait_consumed(url, "visits", kept_count())
    check_dedup(url, "visits", models)
    assert kept_count() > kept
