"""Bad input on an upsert table (issue 24.12), through the session's Kafka and a controller,
two servers and a broker as processes: records without a primary-key value or a comparison
value, amid good ones, are error rows: skipped, counted in consumingSegmentsInfo's
``rowsWithErrors`` and the servers' dropped-rows metric, never indexed (not even with
``skipUpsert``), and never able to win a key. The consumer goes on: later records are
indexed, segments commit and answers stay those of the good records."""

from __future__ import annotations

import re
import uuid

import orjson
import pytest
import requests
from confluent_kafka import Producer

from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.cluster_e2e.upsert_stream import rows_of, schema, table

pytestmark = pytest.mark.integration

NAME = "badkeys"
SEGMENT_ROWS = 30  # indexed rows a partition before it commits
KEYS = 20
# each bad record names the good key (if any) it would have won had it been indexed
BAD = [
    {"ts": 9_000, "amount": 1, "city": "ams"},  # no primary key at all
    {"id": None, "ts": 9_000, "amount": 1, "city": "ams"},  # a null primary key
    {"id": 3, "amount": 999_999, "city": "zzz"},  # no comparison value
    {"id": 4, "ts": None, "amount": 999_999, "city": "zzz"},  # a null comparison value
]


def good(n: int, start_ts: int) -> list[dict]:
    return [{"id": i % KEYS, "ts": start_ts + i, "amount": start_ts + i, "city": "ber"}
            for i in range(n)]  # fmt: skip


def produce(producer: Producer, topic: str, records: list[dict | bytes]) -> None:
    for i, record in enumerate(records):
        key = record.get("id") if isinstance(record, dict) else None
        partition = key % 2 if isinstance(key, int) else i % 2
        value = record if isinstance(record, bytes) else orjson.dumps(record)
        producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def rows_with_errors(cluster) -> int:
    info = cluster.controller("GET", f"/tables/{NAME}/consumingSegmentsInfo").json()
    return sum(
        entry.get("rowsWithErrors") or 0
        for entries in info["_segmentToConsumingInfoMap"].values()
        for entry in entries
    )


def dropped_metric(cluster) -> int:
    total = 0
    for server in cluster.servers.values():
        admin = server.argv[server.argv.index("--admin-port") + 1]
        text = requests.get(f"http://127.0.0.1:{admin}/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("sprig_server_realtime_rows_dropped_total") and NAME in line:
                total += int(float(re.split(r"\s+", line)[-1]))
    return total


def stored(url: str) -> int | None:
    """Every indexed record (skipUpsert), None while a segment is not served yet."""
    try:
        return rows_of(url, f"SELECT COUNT(*) FROM {NAME}", skipUpsert="true")[0][0]
    except (AssertionError, requests.RequestException):
        return None


def expect_latest(url: str, produced: list[dict]) -> None:
    latest: dict[int, dict] = {}
    for row in produced:
        latest[row["id"]] = row  # increasing ts: the last record of a key wins
    assert rows_of(url, f"SELECT COUNT(*), SUM(amount) FROM {NAME}") == [
        [len(latest), sum(r["amount"] for r in latest.values())]
    ]
    answer = rows_of(url, f"SELECT id, amount, city FROM {NAME} ORDER BY id LIMIT 100")
    assert answer == [[k, r["amount"], r["city"]] for k, r in sorted(latest.items())]
    assert rows_of(url, f"SELECT COUNT(*) FROM {NAME} WHERE city = 'zzz'", skipUpsert="true") == [
        [0]
    ]


def test_records_without_key_or_comparison_value_are_error_rows(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = create_topic(kafka.bootstrap_servers, f"badkeys_{uuid.uuid4().hex[:8]}")
    config = table(NAME, kafka.bootstrap_servers, topic, SEGMENT_ROWS, 1,
                   upsertConfig={"mode": "FULL"})  # fmt: skip
    for path, body in (("/schemas", schema(NAME)), ("/tables", config)):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
    url = cluster.broker_url

    # 1. below the flush point: bad records between good ones, and one that is not JSON
    first = good(40, 1_000)
    produce(producer, topic, first[:20] + BAD + [b"{not json"] + first[20:])
    wait_until(lambda: stored(url) == 40, "the 40 good records indexed", 60)
    expect_latest(url, first)
    wait_until(lambda: rows_with_errors(cluster) == len(BAD) + 1,
               f"{len(BAD) + 1} rows with errors in consumingSegmentsInfo", 30)  # fmt: skip

    # 2. more of both, past the flush point: each partition commits and goes on consuming
    second = good(60, 5_000)
    produce(producer, topic, second[:30] + BAD + second[30:])
    produced = first + second
    wait_until(lambda: stored(url) == 100, "the 100 good records indexed", 90)

    def committed() -> int:
        ideal = cluster.controller("GET", f"/tables/{NAME}/idealstate").json()["REALTIME"]
        return sum(1 for m in ideal.values() if set(m.values()) == {"ONLINE"})

    wait_until(lambda: committed() >= 2, "a commit on each partition", 60)
    expect_latest(url, produced)
    wait_until(lambda: dropped_metric(cluster) == 2 * len(BAD) + 1,
               "every error row in the servers' dropped-rows metric", 30)  # fmt: skip
