"""PurgeTask on a REALTIME table end to end, all real: a 2-partition topic on the
Kafka topic consumed by a server, a controller, a broker and a minion with Spark.

Only completed segments are purged: each keeps its name, stream offsets and DONE status in
ZooKeeper with a new CRC, and the server loads the new copy; the CONSUMING segments are not
touched (their purgeable rows still answer) and go on consuming and committing. A segment
left empty is deleted, except the newest completed segment of its partition, which stays as
an empty segment."""

from __future__ import annotations

import collections
import time
import uuid

import orjson
import pytest
from confluent_kafka import Producer

from tests.cluster_e2e.realtime_helpers import create_topic, kafka_stream_configs

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "PurgeTask"
GONE = ("gone", "u3")  # the users whose records are purged
BASE_MS = 1_750_000_000_000


def configs(name: str, bootstrap: str, topic: str) -> tuple[dict, dict]:
    schema = {
        "schemaName": name,
        "dimensionFieldSpecs": [{"name": "uid", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                                "granularity": "1:MILLISECONDS"}],
    }  # fmt: skip
    table = {
        "tableName": name, "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1", "schemaName": name},
        "tenants": {}, "metadata": {},
        # 200 rows per server: 100 per partition
        "tableIndexConfig": {"streamConfigs": {**kafka_stream_configs(bootstrap, topic, 200),
                                               "stream.kafka.consumer.type": "lowlevel"}},
        "task": {"taskTypeConfigsMap": {TASK: {
            "purgeFilter": "uid IN (" + ", ".join(f"'{u}'" for u in GONE) + ")"}}},
    }  # fmt: skip
    return schema, table


class Partitions:
    """Produces rows into chosen partitions; keeps every row produced."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.rows: list[dict] = []

    def produce(self, partition: int, count: int, user=lambda i: f"u{i % 7}") -> list[dict]:
        made = []
        for i in range(count):
            row = {"uid": user(i), "n": len(self.rows) + 1, "ts": BASE_MS + len(self.rows)}
            self.producer.produce(self.topic, orjson.dumps(row), partition=partition)
            self.rows.append(row)
            made.append(row)
        assert self.producer.flush(15) == 0
        return made


def metadata(cluster, name: str) -> dict[str, dict]:
    return cluster.call("GET", f"/segments/{name}/zkmetadata?type=REALTIME").json()


def by_position(fields: dict[str, dict]) -> dict[tuple[int, int], tuple[str, dict]]:
    """(partition, sequence) -> (segment, ZK fields)."""
    out = {}
    for segment, meta in fields.items():
        _, partition, sequence, _ = segment.split("__")
        out[int(partition), int(sequence)] = (segment, meta)
    return out


def wait_done(cluster, name: str, count: int, timeout_s: float = 90) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fields = metadata(cluster, name)
        statuses = collections.Counter(f.get("segment.realtime.status") for f in fields.values())
        if statuses["DONE"] == count and statuses["IN_PROGRESS"] == 2:
            return fields
        time.sleep(0.3)
    raise AssertionError(f"expected {count} DONE segments: {fields}")


def answers(cluster, name: str) -> list:
    return cluster.rows(f"SELECT uid, COUNT(*), SUM(n) FROM {name} GROUP BY uid "
                        f"ORDER BY uid LIMIT 100")  # fmt: skip


def expected(rows: list[dict]) -> list:
    count, total = collections.Counter(), collections.Counter()
    for row in rows:
        count[row["uid"]] += 1
        total[row["uid"]] += row["n"]
    return [[u, count[u], float(total[u])] for u in sorted(count)]


def wait_answers(cluster, name: str, rows: list[dict], timeout_s: float = 90) -> None:
    want = expected(rows)
    deadline = time.monotonic() + timeout_s
    got = None
    while time.monotonic() < deadline:
        try:
            got = answers(cluster, name)
            if got == want:
                return
        except AssertionError as exc:
            got = exc
        time.sleep(0.3)
    raise AssertionError(f"{name}: expected {want}, got {got}")


def test_purge_of_completed_realtime_segments(task_cluster, kafka, tmp_path):
    name = f"prt{uuid.uuid4().hex[:6]}"
    topic = f"{name}_events"
    create_topic(kafka.bootstrap_servers, topic)
    schema, table = configs(name, kafka.bootstrap_servers, topic)
    for path, body in (("/schemas", schema), ("/tables", table)):
        response = task_cluster.call("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.text}"

    stream = Partitions(kafka.bootstrap_servers, topic)
    gone = lambda i: "gone"  # noqa: E731 - every record of such a segment is purged
    mixed = lambda i: GONE[0] if i % 5 == 0 else f"u{i % 7}"  # noqa: E731
    # partition 0: sequence 1 is all purged, so deleted; partition 1: sequence 2, its newest
    # completed segment, is all purged but kept, empty
    committed = (stream.produce(0, 100) + stream.produce(0, 100, gone) + stream.produce(0, 100)
                 + stream.produce(1, 100) + stream.produce(1, 100) + stream.produce(1, 100, gone))  # fmt: skip
    consuming = stream.produce(0, 50, mixed) + stream.produce(1, 50, mixed)
    wait_answers(task_cluster, name, stream.rows)
    before = by_position(wait_done(task_cluster, name, 6))
    assert all(meta["segment.total.docs"] == "100" for _, meta in before.values()
               if meta["segment.realtime.status"] == "DONE")  # fmt: skip

    debug = task_cluster.run_task(TASK, f"{name}_REALTIME")
    infos = debug["subtaskInfos"]
    assert [i["state"] for i in infos] == ["COMPLETED"] * 6, [i.get("info") for i in infos]
    purged = sorted(i["taskConfig"]["configs"]["segmentName"] for i in infos)
    assert purged == sorted(s for s, m in before.values()
                            if m["segment.realtime.status"] == "DONE")  # fmt: skip
    kept_empty = {i["taskConfig"]["configs"]["segmentName"] for i in infos
                  if i["taskConfig"]["configs"].get("keepEmptySegment") == "true"}  # fmt: skip
    assert kept_empty == {before[0, 2][0], before[1, 2][0]}

    # every purged record is gone from the completed segments; consuming ones are untouched
    left = [r for r in committed if r["uid"] not in GONE] + consuming
    wait_answers(task_cluster, name, left)
    in_consuming = sum(r["uid"] in GONE for r in consuming)
    assert in_consuming > 0
    assert task_cluster.rows(f"SELECT COUNT(*) FROM {name} WHERE uid IN ('gone', 'u3')") == [
        [in_consuming]
    ]
    after = by_position(metadata(task_cluster, name))
    assert (0, 1) not in after  # left empty: deleted
    segment, empty = after[1, 2]  # left empty, but its partition's newest: kept
    assert empty["segment.total.docs"] == "0" and empty["segment.realtime.status"] == "DONE"
    for position, (segment, old) in before.items():
        if position == (0, 1):
            continue
        new = after[position][1]
        for key in ("segment.realtime.status", "segment.realtime.startOffset",
                    "segment.realtime.endOffset"):  # fmt: skip
            assert new.get(key) == old.get(key), (segment, key, old, new)
        if old["segment.realtime.status"] == "DONE":
            assert new["segment.crc"] != old["segment.crc"], segment
            assert int(orjson.loads(new["custom.map"])["PurgeTask.time"]) > 0
    # not due again for 14 days
    again = task_cluster.call("POST", f"/tasks/schedule?taskType={TASK}&tableName="
                                      f"{name}_REALTIME").json()  # fmt: skip
    assert again[TASK] == "" and again["generationErrors"] == "", again

    # a consuming segment cannot be replaced by an upload under its name
    (consuming_name,) = [s for s, m in metadata(task_cluster, name).items()
                         if m["segment.realtime.status"] == "IN_PROGRESS" and "__0__" in s]  # fmt: skip
    response = upload_as(task_cluster, name, schema, table, consuming_name, tmp_path)
    assert response.status_code == 409 and "still being consumed" in response.text, response.text
    assert metadata(task_cluster, name)[consuming_name]["segment.realtime.status"] == "IN_PROGRESS"

    # the partitions go on: the consuming segments commit at 100 rows and their successors
    # consume on, nothing lost or counted twice
    more = stream.produce(0, 60, mixed) + stream.produce(1, 60, mixed)
    wait_answers(task_cluster, name, left + more)
    fields = wait_done(task_cluster, name, 7)
    assert {p for p, _ in by_position(fields)} == {0, 1}


def upload_as(cluster, name: str, schema: dict, table: dict, segment: str, work):
    """POST a one-row segment named ``segment`` to the REALTIME table."""
    import pyarrow as pa

    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    parsed = Schema.from_json(schema)
    rows = pa.Table.from_pylist([{"uid": "x", "n": 1, "ts": BASE_MS}])
    built = build_segment(rows, parsed, TableConfig.from_json(table, schema=parsed),
                          work / "built", segment_name=segment)  # fmt: skip
    tar = pack_segment(built.path, work / "segment.tar.gz")
    with tar.open("rb") as handle:
        return cluster.call("POST", "/segments",
                            params={"tableName": name, "tableType": "REALTIME"},
                            files={"file": (tar.name, handle, "application/gzip")})  # fmt: skip
