"""A hybrid table end to end with real consumption: OFFLINE segments pushed to the controller,
rows streaming through the local Kafka into the REALTIME table of the same
name (two partitions, one per server, committing every few seconds), a broker answering
``COUNT(*)`` and ``SUM(x)`` over both.

While the producer runs, every answer must be exact for the broker's time boundary: the
OFFLINE rows with ``ts <= boundary`` plus, per partition, a prefix (what the server has
consumed so far) of the produced rows with ``ts > boundary``. The reference is computed here
from what was produced (plain Python for the prefixes, DuckDB for the final totals), never
from the system under test. ``x`` is random, so a row counted twice or missed shows in the
sum. Midway a newer OFFLINE segment is pushed, and the boundary moves while rows stream."""

from __future__ import annotations

import random
import threading
import time
import uuid
from itertools import accumulate

import duckdb
import orjson
import pyarrow as pa
import pytest
import requests
from confluent_kafka import Producer

from tests.cluster_e2e.conftest import upload_tar
from tests.cluster_e2e.realtime_helpers import create_topic, kafka_stream_configs, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLE = "trips"
HOUR_MS = 3_600_000
T0 = 1_700_000_000_000 // HOUR_MS * HOUR_MS
PARTITIONS = 2
ROWS_PER_SEGMENT = 400  # per server; each server consumes one partition
STREAM_ROWS = 6000
STREAM_RATE = 300  # rows a second
SCHEMA = {
    "schemaName": TABLE,
    "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "x", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip
# HOURLY pushes: the boundary is the newest OFFLINE time minus one hour
OFFLINE_CONFIG = {
    "tableName": TABLE, "tableType": "OFFLINE",
    "segmentsConfig": {"timeColumnName": "ts", "replication": "1",
                       "segmentPushType": "APPEND", "segmentPushFrequency": "HOURLY"},
    "tenants": {}, "tableIndexConfig": {}, "metadata": {},
}  # fmt: skip


def realtime_config(bootstrap: str, topic: str) -> dict:
    streams = kafka_stream_configs(bootstrap, topic, ROWS_PER_SEGMENT)
    streams["stream.kafka.consumer.factory.class.name"] = (
        "org.apache.pinot.plugin.stream.kafka30.KafkaConsumerFactory"
    )
    return {
        "tableName": TABLE, "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1"},
        "tenants": {}, "metadata": {}, "tableIndexConfig": {"streamConfigs": streams},
    }  # fmt: skip


def offline_rows(rng: random.Random, hour: int, n: int) -> list[dict]:
    """``n`` rows spread over hour ``hour`` after T0, in time order."""
    step = HOUR_MS // n
    return [{"city": f"c{rng.randrange(7)}", "x": rng.randrange(1, 1_000_000),
             "ts": T0 + hour * HOUR_MS + i * step} for i in range(n)]  # fmt: skip


class Produced:
    """Rows handed to the producer, per partition in produce order (the order a consumer
    reads them), kept under a lock for snapshots while the producer thread runs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[list[tuple[int, int]]] = [[] for _ in range(PARTITIONS)]

    def add(self, partition: int, ts: int, x: int) -> None:
        with self.lock:
            self.rows[partition].append((ts, x))

    def snapshot(self) -> list[list[tuple[int, int]]]:
        with self.lock:
            return [list(rows) for rows in self.rows]


def stream_rows(bootstrap: str, topic: str, rows: list[dict], produced: Produced,
                stop: threading.Event) -> None:  # fmt: skip
    """Produces ``rows`` at STREAM_RATE a second, row i to partition i % PARTITIONS."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started = time.monotonic()
    for i, row in enumerate(rows):
        if stop.is_set():
            break
        wait = started + i / STREAM_RATE - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        partition = i % PARTITIONS
        produced.add(partition, row["ts"], row["x"])  # before: a consumer may see it at once
        producer.produce(topic, orjson.dumps(row), partition=partition)
        producer.poll(0)
    assert producer.flush(30) == 0


def reachable(realtime_count: int, realtime_sum: int, produced, boundary: int) -> bool:
    """Whether some per-partition prefix of the produced rows gives exactly this count and
    sum of rows with ts > boundary. A prefix holds k "above" rows for any k up to all of
    them, and the same k always means the same rows, so one loop over k0 decides it."""
    prefix = []
    for rows in produced:
        above = [x for ts, x in rows if ts > boundary]
        prefix.append([0, *accumulate(above)])
    first, second = prefix
    for k0 in range(min(realtime_count, len(first) - 1) + 1):
        k1 = realtime_count - k0
        if k1 < len(second) and first[k0] + second[k1] == realtime_sum:
            return True
    return False


def totals_for(offline: list[dict], boundary: int) -> tuple[int, int]:
    kept = [row["x"] for row in offline if row["ts"] <= boundary]
    return len(kept), sum(kept)


def upload(cluster, rows: list[dict], name: str, out) -> None:
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    built = build_segment(pa.Table.from_pylist(rows), Schema.from_json(SCHEMA),
                          TableConfig.from_json(OFFLINE_CONFIG), out / "built",
                          segment_name=name)  # fmt: skip
    upload_tar(cluster, TABLE, pack_segment(built.path, out / f"{name}.tar.gz"))


def query(cluster, sql: str) -> dict:
    # the machine is shared by parallel test runs: a generous time limit, so a slow answer
    # is still a whole one (an answer with exceptions fails the test)
    return cluster.query(sql, timeout=90, timeoutMs=60_000)


def broker_boundary(cluster) -> int | None:
    response = requests.get(f"{cluster.broker_url}/debug/timeBoundary/{TABLE}", timeout=10)
    return int(response.json()["timeValue"]) if response.status_code == 200 else None


def test_hybrid_totals_are_exact_while_rows_stream_in(realtime_cluster, kafka, tmp_path):
    cluster = realtime_cluster
    rng = random.Random(20261123)
    # OFFLINE: hours 0-2 after T0; the boundary is the last row's time minus an hour
    offline = []
    assert cluster.controller("POST", "/schemas", json=SCHEMA).ok
    response = cluster.controller("POST", "/tables", json=OFFLINE_CONFIG)
    assert response.ok, response.text
    for hour in range(3):
        rows = offline_rows(rng, hour, 500)
        upload(cluster, rows, f"{TABLE}_h{hour}", tmp_path)
        offline += rows
    boundary = max(row["ts"] for row in offline) - HOUR_MS
    # a row of each side exactly at the boundary: OFFLINE keeps its own, REALTIME drops its own
    edge = {"city": "edge", "x": 777_777, "ts": boundary}
    upload(cluster, [edge], f"{TABLE}_edge", tmp_path)
    offline.append(edge)

    # REALTIME: the stream runs from hour 1 (overlapping the OFFLINE data) to hour 6
    topic = f"trips_{uuid.uuid4().hex[:8]}"
    create_topic(kafka.bootstrap_servers, topic, PARTITIONS)
    step = 5 * HOUR_MS // STREAM_ROWS
    stream = [{"city": f"c{rng.randrange(7)}", "x": rng.randrange(1, 1_000_000),
               "ts": T0 + HOUR_MS + i * step} for i in range(STREAM_ROWS)]  # fmt: skip
    stream[10] = {**stream[10], "city": "edge", "ts": boundary, "x": 555_555}
    response = cluster.controller("POST", "/tables",
                                  json=realtime_config(kafka.bootstrap_servers, topic))  # fmt: skip
    assert response.ok, response.text
    # a table is hybrid (and has a boundary) once both halves exist
    wait_until(lambda: broker_boundary(cluster) == boundary, f"the broker's boundary {boundary}")
    wait_until(lambda: cluster.query(f"SELECT COUNT(*) FROM {TABLE}")["resultTable"]["rows"]
               == [[totals_for(offline, boundary)[0]]], "the OFFLINE rows")  # fmt: skip

    produced = Produced()
    stop = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            stream_rows(kafka.bootstrap_servers, topic, stream, produced, stop)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    producer = threading.Thread(target=produce, name="hybrid-producer")
    producer.start()
    # hour 3 pushed to the OFFLINE side while rows stream: the boundary moves an hour on
    newer = offline_rows(rng, 3, 500)
    later = max(row["ts"] for row in newer) - HOUR_MS
    checked = {"mid-stream": 0, "after the move": 0}
    pushed_at = time.monotonic() + 8
    try:
        boundaries = [boundary]
        while producer.is_alive():
            if pushed_at and time.monotonic() > pushed_at:
                upload(cluster, newer, f"{TABLE}_h3", tmp_path)
                offline += newer
                boundaries.append(later)  # until the broker says so, either may be in use
                pushed_at = 0
            served = broker_boundary(cluster)
            if served == later:
                boundaries = [later]
            answer = query(cluster, f"SELECT COUNT(*), SUM(x) FROM {TABLE}")
            snapshot = produced.snapshot()  # after: holds every row the answer can hold
            assert answer["exceptions"] == [], answer
            got_count, got_sum = answer["resultTable"]["rows"][0]
            fits = [
                b for b in boundaries
                if reachable(got_count - totals_for(offline, b)[0],
                             got_sum - totals_for(offline, b)[1], snapshot, b)
            ]  # fmt: skip
            assert fits, (
                f"COUNT {got_count} SUM {got_sum} is no exact total for boundary "
                f"{boundaries} with {[len(r) for r in snapshot]} rows produced"
            )
            checked["mid-stream"] += 1
            checked["after the move"] += boundaries == [later]
            time.sleep(0.05)
    finally:
        stop.set()
        producer.join(60)
    assert not errors, errors
    assert checked["mid-stream"] >= 50 and checked["after the move"] >= 10, checked
    assert broker_boundary(cluster) == later

    # everything consumed: the totals equal the reference's, computed by DuckDB
    db = duckdb.connect()
    db.execute("CREATE TABLE offline_rows (ts BIGINT, x BIGINT)")
    db.executemany("INSERT INTO offline_rows VALUES (?, ?)", [(r["ts"], r["x"]) for r in offline])
    db.execute("CREATE TABLE stream_rows (ts BIGINT, x BIGINT)")
    db.executemany("INSERT INTO stream_rows VALUES (?, ?)", [(r["ts"], r["x"]) for r in stream])
    expected = db.execute(
        "SELECT COUNT(*), SUM(x) FROM (SELECT x FROM offline_rows WHERE ts <= ? "
        "UNION ALL SELECT x FROM stream_rows WHERE ts > ?)", [later, later],
    ).fetchone()  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        answer = query(cluster, f"SELECT COUNT(*), SUM(x) FROM {TABLE}")
        if tuple(answer["resultTable"]["rows"][0]) == expected or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert tuple(answer["resultTable"]["rows"][0]) == expected, answer
    # and per side: the edge row only once, from the OFFLINE side; REALTIME segments committed
    edge_rows = cluster.query(f"SELECT x FROM {TABLE} WHERE city = 'edge'")
    assert edge_rows["resultTable"]["rows"] == [[777_777]]
    realtime = cluster.query(f"SELECT COUNT(*) FROM {TABLE}_REALTIME")
    assert realtime["resultTable"]["rows"][0][0] == STREAM_ROWS
    metadata = cluster.controller("GET", f"/segments/{TABLE}_REALTIME/zkmetadata").json()
    done = [m for m in metadata.values() if m.get("segment.realtime.status") == "DONE"]
    assert len(done) >= STREAM_ROWS // ROWS_PER_SEGMENT - PARTITIONS, sorted(metadata)
