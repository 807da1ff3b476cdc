"""The table page's real-time panel in a real headless Chromium, against the console's live
cluster consuming a real 2-partition topic on the session's Kafka: one row per
partition with its CONSUMING segment and servers, and the start offsets, commits and rows
growing as rows are produced past the flush threshold; current offsets growing and the live
chart of ingestion rate and lag; force commit followed to the end of its job, pause, and
resume from the smallest offset, each after a confirmation. An OFFLINE table has no panel."""

from __future__ import annotations

import uuid

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from tests.console.conftest import drop_realtime_table, screenshot

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
        drop_realtime_table(console_cluster, TABLE)


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
    # offsets and lags come from the controller's consumingSegmentsInfo
    expect(panel.locator("#realtime-status")).to_contain_text("consumingSegmentsInfo")
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


def partition_row(page, partition: int):
    rows = page.get_by_test_id("realtime-panel").get_by_test_id("realtime-partitions")
    return rows.locator(f'tr[data-partition="{partition}"]')


def confirm(page, label: str) -> None:
    page.get_by_role("dialog").get_by_role("button", name=label, exact=True).click()


def test_current_offsets_grow_and_the_chart_samples_them(page, console_cluster, realtime_table):
    realtime_table(5)
    page.goto(f"/console/tables/{TABLE}")
    for partition in (0, 1):
        current = partition_row(page, partition).locator('td[data-col="current-offset"]')
        expect(current).to_have_text("5", timeout=30_000)
    realtime_table(7)
    for partition in (0, 1):
        current = partition_row(page, partition).locator('td[data-col="current-offset"]')
        expect(current).to_have_text("12", timeout=30_000)
    chart = page.get_by_test_id("rt-chart")
    expect(chart).to_be_visible()
    # a sample every 5 s; the one after the produce shows a positive rate for both partitions
    page.wait_for_function(
        """() => {
            const rate = JSON.parse(document.querySelector("#rt-rate-chart").dataset.lastRate || "{}");
            return Object.keys(rate).length === 2;
        }""",
        timeout=30_000,
    )
    samples = int(page.get_by_test_id("rt-rate-chart").get_attribute("data-samples"))
    assert samples >= 2
    expect(page.get_by_test_id("rt-chart-note")).to_contain_text("2 partition(s)")
    realtime_table(9)
    page.wait_for_function(
        """() => {
            const rate = JSON.parse(document.querySelector("#rt-rate-chart").dataset.lastRate || "{}");
            return ["0", "1"].every((p) => rate[p] > 0);
        }""",
        timeout=30_000,
    )
    # the samples are kept per table in the tab: a reload keeps the chart's history
    page.reload()
    expect(page.get_by_test_id("rt-chart")).to_be_visible(timeout=20_000)
    kept = int(page.get_by_test_id("rt-rate-chart").get_attribute("data-samples"))
    assert kept > samples
    screenshot(page, "table-realtime-chart")


def test_force_commit_pause_and_resume_from_smallest(page, console_cluster, realtime_table):
    realtime_table(5)
    page.goto(f"/console/tables/{TABLE}")
    for partition in (0, 1):
        expect(partition_row(page, partition)).to_contain_text("CONSUMING", timeout=20_000)
        current = partition_row(page, partition).locator('td[data-col="current-offset"]')
        expect(current).to_have_text("5", timeout=30_000)
    status = page.get_by_test_id("rt-pause-status")
    expect(status).to_have_attribute("data-paused", "false")
    expect(page.get_by_test_id("rt-resume")).to_be_disabled()

    # force commit: cancelled first, then confirmed and followed until its job is done
    page.get_by_test_id("rt-force-commit").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_test_id("rt-op-result")).to_be_hidden()
    page.get_by_test_id("rt-force-commit").click()
    confirm(page, "Force commit")
    result = page.get_by_test_id("rt-op-result")
    expect(result.get_by_test_id("force-commit-job")).not_to_be_empty()
    job = result.get_by_test_id("force-commit-status")
    expect(job).to_have_attribute("data-left", "0", timeout=60_000)
    expect(job).to_contain_text("2 of 2 segment(s) committed")
    for partition in (0, 1):
        row = partition_row(page, partition)
        expect(row.locator('td[data-col="committed"]')).to_have_text("1", timeout=30_000)
        expect(row.locator('td[data-col="committed-rows"]')).to_have_text("5")
        expect(row.locator('td[data-col="start-offset"]')).to_have_text("5")
    screenshot(page, "table-realtime-force-commit")

    # pause: the consuming segments are committed and none follows them
    page.get_by_test_id("rt-pause").click()
    confirm(page, "Pause")
    expect(result.get_by_test_id("rt-op-outcome")).to_contain_text("Pause flag is set")
    expect(status).to_have_attribute("data-paused", "true")
    expect(status).to_contain_text("paused")
    expect(page.get_by_test_id("rt-pause")).to_be_disabled()
    for partition in (0, 1):
        consuming = partition_row(page, partition).locator("td").nth(1)
        expect(consuming).to_have_text("none", timeout=60_000)
    screenshot(page, "table-realtime-paused")

    # resume from the smallest offset: new consuming segments start at offset 0
    page.get_by_test_id("rt-resume").click()
    page.get_by_test_id("rt-consume-from").select_option("smallest")
    confirm(page, "Resume")
    expect(result.get_by_test_id("rt-op-outcome")).to_contain_text("Pause flag is cleared")
    expect(status).to_have_attribute("data-paused", "false")
    for partition in (0, 1):
        row = partition_row(page, partition)
        expect(row).to_contain_text("CONSUMING", timeout=60_000)
        expect(row.locator('td[data-col="start-offset"]')).to_have_text("0")
    screenshot(page, "table-realtime-resumed")
