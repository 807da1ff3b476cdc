"""Retention on a REALTIME table end to end: a controller, two servers and a broker consuming
a 2-partition topic. RetentionManager deletes the completed (DONE) segments whose end time in
ZooKeeper is older than ``retentionTimeValue``/``retentionTimeUnit``, keeps recent ones, and
never touches a CONSUMING segment, even one holding only old rows; consumption goes on
across the deletions with nothing lost or counted twice."""

from __future__ import annotations

import time

import orjson
import pytest
from confluent_kafka import Producer

from engine.common.clock import now_ms
from tests.cluster_e2e.realtime_helpers import (
    SCHEMA,
    TABLE,
    new_topic,
    run_periodic_task,
    table_config,
    wait_totals,
)

pytestmark = pytest.mark.integration
OLD_MS = 1_600_000_000_000  # September 2020: past a 365-day retention
DAY_MS = 86_400_000


class Rows:
    """Produces rows with a chosen event time; keeps what it produced."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.count = self.total = 0

    def produce(self, rows: int, ts_ms: int) -> None:
        for i in range(rows):
            record = {"user": f"u{i % 5}", "n": i + 1, "ts": ts_ms + i}
            self.producer.produce(self.topic, orjson.dumps(record), partition=i % 2)
            self.count += 1
            self.total += i + 1
        assert self.producer.flush(15) == 0

    def forget(self, rows: int) -> None:
        """What one ``produce(rows, ...)`` added, once retention deleted it."""
        self.count -= rows
        self.total -= sum(i + 1 for i in range(rows))


def segments_by_status(cluster) -> dict[str, list[str]]:
    metadata = cluster.controller("GET", f"/segments/{TABLE}_REALTIME/zkmetadata").json()
    out: dict[str, list[str]] = {}
    for segment, fields in metadata.items():
        out.setdefault(fields.get("segment.realtime.status"), []).append(segment)
    return {status: sorted(names) for status, names in out.items()}


def wait_done(cluster, count: int, timeout_s: float = 60) -> dict[str, list[str]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        by_status = segments_by_status(cluster)
        if len(by_status.get("DONE", [])) == count and len(by_status.get("IN_PROGRESS", [])) == 2:
            return by_status
        time.sleep(0.3)
    raise AssertionError(f"expected {count} DONE segments: {by_status}")


def sequence(segment: str) -> int:
    return int(segment.split("__")[2])


def run_retention(cluster) -> dict:
    report = run_periodic_task(cluster, "RetentionManager")
    return report["deletedSegments"].get(f"{TABLE}_REALTIME", [])


def test_retention_deletes_old_completed_segments_only(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = new_topic(kafka)
    rows = Rows(kafka.bootstrap_servers, topic)
    config = table_config(kafka.bootstrap_servers, topic)
    config["segmentsConfig"].update(retentionTimeUnit="DAYS", retentionTimeValue="365")
    assert cluster.controller("POST", "/schemas", json=SCHEMA).ok
    response = cluster.controller("POST", "/tables", json=config)
    assert response.ok, response.text

    now = now_ms()
    rows.produce(200, OLD_MS)  # sequence 0 of each partition: old, committed
    wait_done(realtime_cluster, 2)
    rows.produce(200, now - DAY_MS)  # sequence 1: recent, committed
    wait_done(realtime_cluster, 4)
    rows.produce(60, OLD_MS)  # sequence 2: old rows, still consuming
    wait_totals(cluster, rows.count, rows.total)

    deleted = run_retention(cluster)
    assert sorted(sequence(s) for s in deleted) == [0, 0], deleted
    by_status = segments_by_status(cluster)
    assert sorted(sequence(s) for s in by_status["DONE"]) == [1, 1], by_status
    assert sorted(sequence(s) for s in by_status["IN_PROGRESS"]) == [2, 2], by_status
    rows.forget(200)
    wait_totals(cluster, rows.count, rows.total)
    assert run_retention(cluster) == []  # nothing else is due

    # the consuming segments commit their old rows; the next run deletes them, and the
    # partitions go on consuming from where they ended
    rows.produce(140, OLD_MS)  # 60 + 140 = 100 per partition: sequence 2 commits
    wait_done(realtime_cluster, 4)
    wait_totals(cluster, rows.count, rows.total)
    deleted = run_retention(cluster)
    assert sorted(sequence(s) for s in deleted) == [2, 2], deleted
    rows.forget(60)
    rows.forget(140)
    wait_totals(cluster, rows.count, rows.total)
    rows.produce(30, now)
    wait_totals(cluster, rows.count, rows.total)
    by_status = segments_by_status(cluster)
    assert sorted(sequence(s) for s in by_status["IN_PROGRESS"]) == [3, 3], by_status
