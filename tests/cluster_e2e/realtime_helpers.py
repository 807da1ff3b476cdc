"""What the REALTIME end-to-end tests share: the `clicks` table on a 2-partition topic of the
session's Kafka, a producer that remembers what it produced, and the waits on
the broker's totals and the controller's ideal state.

Tests of other tables use ``create_topic``, ``kafka_stream_configs`` and ``wait_until``."""

from __future__ import annotations

import time
import uuid

import orjson
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TABLE = "clicks"
ROWS_PER_SEGMENT = 100
SCHEMA = {
    "schemaName": TABLE,
    "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip


def kafka_stream_configs(bootstrap: str, topic: str, flush_rows: int) -> dict[str, str]:
    """A JSON topic read from its start, segments cut at ``flush_rows`` (per server, as in
    Pinot: shared by the partitions a server consumes)."""
    return {
        "streamType": "kafka",
        "stream.kafka.topic.name": topic,
        "stream.kafka.broker.list": bootstrap,
        "stream.kafka.decoder.class.name":
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
        "realtime.segment.flush.threshold.rows": str(flush_rows),
    }  # fmt: skip


def table_config(bootstrap: str, topic: str, replicas: int = 1) -> dict:
    streams = kafka_stream_configs(bootstrap, topic, ROWS_PER_SEGMENT * replicas)
    streams["stream.kafka.consumer.type"] = "lowlevel"
    streams["stream.kafka.consumer.factory.class.name"] = (
        "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory"
    )
    return {
        "tableName": TABLE,
        "tableType": "REALTIME",
        "segmentsConfig": {
            "timeColumnName": "ts",
            "replicasPerPartition": str(replicas),
            "schemaName": TABLE,
        },
        "tenants": {},
        # with both servers consuming both partitions (replicas=2), still 100 rows a segment
        "tableIndexConfig": {"invertedIndexColumns": ["user"], "streamConfigs": streams},
        "metadata": {},
    }


def create_topic(bootstrap: str, topic: str, partitions: int = 2) -> str:
    """Created up front, with `partitions` partitions (Kafka would create a topic on the first
    produce with one)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    return topic


def new_topic(kafka) -> str:
    return create_topic(kafka.bootstrap_servers, f"clicks_{uuid.uuid4().hex[:8]}")


def create_table(cluster, kafka, topic: str, replicas: int = 1) -> None:
    assert cluster.controller("POST", "/schemas", json=SCHEMA).ok
    config = table_config(kafka.bootstrap_servers, topic, replicas)
    response = cluster.controller("POST", "/tables", json=config)
    assert response.ok, response.text


class Stream:
    """What was produced, to compare with what the broker answers."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.count = 0
        self.total = 0

    def produce(self, rows: int) -> None:
        for _ in range(rows):
            i = self.count
            value = i * 7 + 3
            record = {"user": f"u{i % 9}", "n": value, "ts": 1_700_000_000_000 + i}
            self.producer.produce(self.topic, orjson.dumps(record), partition=i % 2)
            self.count += 1
            self.total += value
        assert self.producer.flush(15) == 0


def wait_until(check, what: str, timeout_s: float = 60, interval_s: float = 0.3):
    """``check()``'s first truthy answer, asked every ``interval_s`` up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(interval_s)
    raise AssertionError(f"timed out waiting for {what}")


def wait_totals(cluster, count: int, total: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = cluster.query(f"SELECT COUNT(*), SUM(n) FROM {TABLE}")
            rows = last.get("resultTable", {}).get("rows")
            if rows and rows[0][0] == count and rows[0][1] == total and not last["exceptions"]:
                return
        except (requests.RequestException, AssertionError) as exc:
            last = exc
        time.sleep(0.3)
    raise AssertionError(f"expected COUNT {count} and SUM {total}, last answer: {last}")


def ideal_state(cluster) -> dict:
    return cluster.controller("GET", f"/tables/{TABLE}/idealstate").json()["REALTIME"] or {}


def wait_consuming_segments(cluster, partitions: int, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    ideal = {}
    while time.monotonic() < deadline:
        ideal = ideal_state(cluster)
        if len(ideal) == partitions:
            return ideal
        time.sleep(0.2)
    raise AssertionError(f"no CONSUMING segment per partition: {ideal}")


def run_periodic_task(cluster, task: str) -> dict:
    """Runs ``task`` on the REALTIME table now, through /periodictask/run; its report."""
    body = cluster.controller("GET", "/periodictask/run", params={
        "taskname": task, "tableName": TABLE, "type": "REALTIME"}).json()  # fmt: skip
    assert body["isSuccessful"], body
    return body["taskReport"]
