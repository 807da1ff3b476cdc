"""The table page's real-time panel in a real headless Chromium, against the console's live
cluster consuming a real 2-partition topic on the Kafka-protocol broker (tansu): one row per
partition with its CONSUMING segment and servers, and the start offsets, commits and rows
growing as rows are produced past the flush threshold. An OFFLINE table has no panel."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from tests.console.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]
TABLE = "clicks_rt"
THRESHOLD = 20  # rows per segment: each server consumes one partition here
SCHEMA = {
    "schemaName": TABLE,
    "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip


def table_config(bootstrap: str, topic: str) -> dict:
    kafka = "org.apache.pinot.plugin.stream.kafka"
    return {
        "tableName": TABLE,
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1",
                           "schemaName": TABLE},
        "tenants": {},
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka",
            "stream.kafka.topic.name": topic,
            "stream.kafka.broker.list": bootstrap,
            "stream.kafka.consumer.type": "lowlevel",
            "stream.kafka.decoder.class.name": f"{kafka}.KafkaJSONMessageDecoder",
            "stream.kafka.consumer.factory.class.name": f"{kafka}20.KafkaConsumerFactory",
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            "stream.kafka.consumer.prop.fetch.wait.max.ms": "10",
            "realtime.segment.flush.threshold.rows": str(THRESHOLD),
        }},
        "metadata": {},
    }  # fmt: skip


@pytest.fixture
def realtime_table(console_cluster, kafka):
    topic = f"clicks_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(10)
    assert console_cluster.api("POST", "/schemas", json=SCHEMA).ok
    response = console_cluster.api(
        "POST", "/tables", json=table_config(kafka.bootstrap_servers, topic)
    )
    assert response.ok, response.text
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})

    def produce(per_partition: int) -> None:
        for partition in (0, 1):
            for i in range(per_partition):
                record = {"user": f"u{i % 5}", "n": i, "ts": 1_700_000_000_000 + i}
                producer.produce(topic, orjson.dumps(record), partition=partition)
        assert producer.flush(15) == 0

    try:
        yield produce
    finally:
        # the session's other tests count the cluster's tables
        console_cluster.api("DELETE", f"/tables/{TABLE}", params={"type": "REALTIME"})
        deadline = time.monotonic() + 30
        while console_cluster.api("GET", f"/tables/{TABLE}").ok and time.monotonic() < deadline:
            time.sleep(0.3)
        console_cluster.api("DELETE", f"/schemas/{TABLE}")


def test_partitions_consume_and_commit(page, console_cluster, realtime_table):
    realtime_table(5)
    page.goto(f"/console/tables/{TABLE}")
    panel = page.get_by_test_id("realtime-panel")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("topic clicks_")
    expect(page.get_by_test_id("config-warnings")).to_be_attached()  # the warnings panel stays
    rows = panel.get_by_test_id("realtime-partitions")
    for partition in ("0", "1"):
        row = rows.locator(f'tr[data-partition="{partition}"]')
        expect(row).to_contain_text("#0")
        # the panel refreshes every 5 s; the servers may load the segment just after a refresh
        expect(row).to_contain_text("CONSUMING", timeout=20_000)
        expect(row.locator('td[data-col="start-offset"]')).to_have_text("0")
        expect(row.locator('td[data-col="committed"]')).to_have_text("0")
        expect(row.locator('td[data-col="since"]')).to_contain_text("ago")
    # the REST API has no consumingSegmentsInfo yet; the panel says so instead of guessing
    expect(panel).to_contain_text("consumingSegmentsInfo")
    screenshot(page, "table-realtime-consuming")

    # past the threshold each partition commits a segment and consumes the next from its end
    realtime_table(THRESHOLD + 5)
    for partition in ("0", "1"):
        row = rows.locator(f'tr[data-partition="{partition}"]')
        expect(row.locator('td[data-col="committed"]')).to_have_text("1", timeout=60_000)
        expect(row.locator('td[data-col="committed-rows"]')).to_have_text(str(THRESHOLD))
        expect(row.locator('td[data-col="start-offset"]')).to_have_text(str(THRESHOLD))
        expect(row).to_contain_text("#1")
        expect(row.locator('td[data-col="last-commit"]')).to_have_text(str(THRESHOLD))
    screenshot(page, "table-realtime-committed")


def test_an_offline_table_has_no_realtime_panel(page, console_cluster):
    page.goto("/console/tables/airlineStats")
    expect(
        page.get_by_test_id("segments-table").or_(page.locator("#segments table"))
    ).to_be_visible()
    expect(page.get_by_test_id("realtime-panel")).to_be_hidden()
