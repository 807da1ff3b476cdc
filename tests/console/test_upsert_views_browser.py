"""The table page's upsert panel (issue 24.8) in a real headless Chromium, against the
console's live cluster consuming a real 2-partition topic on the session's Kafka: the FULL
upsert settings with Pinot's defaults, primary keys per partition from the servers, and the
committed segments with their valid docs and UpsertCompactionTask's verdict by the table's
thresholds: partition 0's segment is half invalid (due), partition 1's one tenth (not)."""

from __future__ import annotations

import uuid

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from tests.cluster_e2e.upsert_stream import schema, table
from tests.console.conftest import drop_realtime_table, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]
TABLE = "rsvp_upsert"
SEGMENT_ROWS = 20
THRESHOLDS = {"invalidRecordsThresholdPercent": "40", "invalidRecordsThresholdCount": "5",
              "validDocIdsType": "IN_MEMORY"}  # fmt: skip
# per partition: (key, ts) in offset order; the first 20 fill the committed segment
PARTITION_0 = [(k, t) for t in (1, 2) for k in range(0, 20, 2)] + [(40, 3), (42, 3), (44, 3)]
PARTITION_1 = [(k, 1) for k in range(1, 37, 2)] + [(1, 2), (3, 2)] + [(41, 3), (43, 3), (45, 3)]


@pytest.fixture
def upsert_table(console_cluster, kafka):
    topic = f"rsvp_{uuid.uuid4().hex[:8]}"
    bootstrap = kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(10)
    config = table(TABLE, bootstrap, topic, SEGMENT_ROWS, 1, upsertConfig={"mode": "FULL"},
                   task={"taskTypeConfigsMap": {"UpsertCompactionTask": THRESHOLDS}})  # fmt: skip
    for path, body in (("/schemas", schema(TABLE)), ("/tables", config)):
        response = console_cluster.api("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, rows in enumerate((PARTITION_0, PARTITION_1)):
        for key, ts in rows:
            record = {"id": key, "ts": ts, "amount": key * 10 + ts, "city": "ams"}
            producer.produce(topic, orjson.dumps(record), partition=partition)
    assert producer.flush(15) == 0
    try:
        yield
    finally:
        drop_realtime_table(console_cluster, TABLE)


def test_upsert_panel_shows_mode_keys_and_compaction(page, console_cluster, upsert_table):
    page.goto(f"/console/tables/{TABLE}")
    panel = page.get_by_test_id("upsert-panel")
    expect(panel).to_be_visible(timeout=20_000)
    settings = panel.get_by_test_id("upsert-settings")
    expect(settings.locator('dd[data-key="mode"]')).to_have_text("FULL")
    expect(settings.locator('dd[data-key="comparisonColumns"]')).to_have_text("ts")  # time column
    expect(settings.locator('dd[data-key="consistencyMode"]')).to_have_text("NONE")
    expect(settings.locator('dd[data-key="hashFunction"]')).to_have_text("NONE")

    # 10 keys then 3 more on partition 0; 18 then 3 more on partition 1 (the panel refreshes
    # every 5 s, the segments commit once 20 rows are in)
    counts = panel.get_by_test_id("upsert-key-counts")
    expect(counts.get_by_test_id("pk-count")).to_have_text(["13", "21"], timeout=60_000)

    segments = panel.get_by_test_id("upsert-segments")
    expect(segments.locator("tbody tr")).to_have_count(2, timeout=60_000)
    due = segments.locator("tbody tr").nth(0)
    expect(due).to_contain_text(f"{TABLE}__0__0__")
    expect(due).to_contain_text("50.0")
    expect(due).to_contain_text("due for compaction")
    kept = segments.locator("tbody tr").nth(1)
    expect(kept).to_contain_text(f"{TABLE}__1__0__")
    expect(kept).to_contain_text("10.0")
    expect(kept).to_contain_text("below the thresholds")
    expect(panel.get_by_test_id("upsert-thresholds")).to_contain_text("≥ 40% and ≥ 5")
    expect(panel.get_by_test_id("upsert-due-count")).to_have_text("1 of 2")
    screenshot(page, "table-upsert")

    # the same through the controller's Pinot endpoint, one entry per replica
    entries = console_cluster.api(
        "GET", f"/tables/{TABLE}/validDocIdsMetadata", params={"validDocIdsType": "IN_MEMORY"}
    ).json()
    assert sorted((e["segmentName"].split("__")[1], e["totalDocs"], e["totalValidDocs"])
                  for e in entries) == [("0", 20, 10), ("1", 20, 18)]  # fmt: skip


def test_an_offline_table_has_no_upsert_panel(page, console_cluster):
    page.goto("/console/tables/airlineStats")
    expect(page.locator("#segments table")).to_be_visible()
    expect(page.get_by_test_id("upsert-panel")).to_be_hidden()
    answer = console_cluster.api("GET", "/tables/airlineStats_OFFLINE/validDocIdsMetadata")
    assert answer.status_code == 501
