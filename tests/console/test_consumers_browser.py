"""The "Kafka consumers" pages in a real headless Chromium against a live cluster of real
processes (ZooKeeper, controller, server, broker) and the session's Kafka: the
consumer_offsets table fed by the sampler over three minutes, a group behind on two
partitions, and an alert rule that fired.

A person sees the group with its state, members, total lag and status, opens its page to read
the describe table (committed offset, end offset, lag, consumer, host, client, status) and the
lag chart read from the table with SQL, sees the group's alert, and on the list adds a rule
through the form (a bad condition is refused with the reason) and deletes one after
confirming. The old /console/consumer-lag address leads to the same pages."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from engine.common.clock import now_ms
from monitoring import history, tables
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.console.conftest import screenshot
from tests.monitoring.conftest import commit, run_evaluator, wait_rows

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def lag_console(zookeeper, kafka, tmp_path_factory):
    """A cluster whose consumer_offsets table holds three minutes of samples of one group."""
    cluster = start_cluster(zookeeper.address, tmp_path_factory.mktemp("lag_console"), servers=1)
    try:
        bootstrap = kafka.bootstrap_servers
        suffix = uuid.uuid4().hex[:8]
        source, samples_topic = f"shipments-{suffix}", f"lag-samples-{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for topic, partitions in ((source, 2), (samples_topic, 1)):
            admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
        assert cluster.controller("POST", "/schemas", json=tables.schema()).ok
        assert cluster.controller(
            "POST", "/tables", json=tables.table_config(bootstrap, samples_topic)
        ).ok
        producer = Producer({"bootstrap.servers": bootstrap})
        for partition in (0, 1):
            for n in range(10):
                producer.produce(source, value=b"%d" % n, partition=partition)
                assert producer.flush(10) == 0
        group = f"warehouse-{suffix}"
        base = (now_ms() // history.MINUTE_MS - 3) * history.MINUTE_MS
        ticks = iter([base / 1000 + 60 * i + 1 for i in range(3)])
        sampler = LagSampler(KafkaGroupReader(bootstrap), samples_topic, group,
                             clock=lambda: next(ticks))  # fmt: skip
        for offsets in ({0: 2, 1: 1}, {0: 5, 1: 2}, {0: 7, 1: 4}):
            commit(bootstrap, group, source, offsets)
            sampler.publish(sampler.poll_once())
        wait_rows(cluster, history.samples_sql(group, 0, 2**62), 6)
        rule = {"name": "warehouse-behind", "groupPattern": "warehouse-*",
                "condition": "lag > 5"}  # fmt: skip
        assert cluster.controller("POST", "/consumerLagAlerts/rules", json=rule).ok
        assert run_evaluator(cluster) == {"warehouse-behind": [f"{group} firing"]}
        yield cluster, group, source
    finally:
        stop_cluster(cluster)


@pytest.fixture
def lag_page(browser, lag_console):
    context = browser.new_context(
        base_url=lag_console[0].controller_url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught script errors: {errors}"


def test_groups_group_page_chart_and_alerts(lag_page, lag_console):
    page = lag_page
    _, group, source = lag_console
    page.goto("/console/consumers")
    expect(page.get_by_role("link", name="Kafka consumers")).to_be_visible()
    groups = page.get_by_test_id("groups-table")
    row = groups.locator("tr", has=page.locator(f'a[data-group="{group}"]'))
    # committed 7 and 4 of 10: lag 3 + 6; the last samples moved, so neither is stopped
    expect(row).to_contain_text("Empty")
    expect(row.locator("td").nth(2)).to_have_text("0")  # members
    expect(row.locator("td").nth(4)).to_have_text("9")
    expect(row.locator(".badge")).to_have_text("OK")
    events = page.get_by_test_id("events-table")
    expect(events).to_contain_text("warehouse-behind")
    expect(page.get_by_test_id("rules-table")).to_contain_text(group)  # firing for the group
    screenshot(page, "consumers")

    row.locator(f'a[data-group="{group}"]').click()
    page.wait_for_url(f"**/console/consumers/{group}")
    expect(page.get_by_test_id("group-title")).to_have_text(f"Consumer group {group}")
    expect(page.get_by_test_id("group-summary")).to_contain_text(
        "State Empty, 0 member(s), total lag 9"
    )
    partitions = page.get_by_test_id("partitions-table")
    expect(partitions.locator("tbody tr")).to_have_count(2)
    cells = [partitions.locator("tbody tr").nth(i).locator("td") for i in (0, 1)]
    texts = sorted(tuple(c.nth(j).inner_text() for j in range(9)) for c in cells)
    # no member owns them: consumer, host and client are unknown (a dash, as CGC prints "-")
    dash = "\u2013"
    assert texts == [(source, "0", "7", "10", "3", dash, dash, dash, "OK"),
                     (source, "1", "4", "10", "6", dash, dash, dash, "OK")]  # fmt: skip
    expect(page.get_by_test_id("chart-note")).to_have_text("2 partition(s), 3 minute(s) sampled")
    group_events = page.get_by_test_id("events-table")
    expect(group_events).to_contain_text("warehouse-behind")
    expect(group_events).to_contain_text("firing")
    burrow = page.get_by_test_id("burrow-link").get_attribute("href")
    assert burrow == f"/v3/kafka/local/consumer/{group}/lag"
    screenshot(page, "consumer-group")

    page.goto(f"/console/consumer-lag?group={group}")  # the old address
    page.wait_for_url(f"**/console/consumers/{group}")

    page.goto("/console/consumers")
    form = page.get_by_test_id("rule-form")
    form.locator('input[name="name"]').fill("stuck")
    form.locator('input[name="groupPattern"]').fill("warehouse-*")
    form.locator('input[name="condition"]').fill("lag < 5")
    form.get_by_role("button", name="Add rule").click()
    expect(page.locator(".notice-error")).to_contain_text("cannot read condition")
    form.locator('input[name="condition"]').fill("no progress for 2m")
    form.get_by_role("button", name="Add rule").click()
    rules = page.get_by_test_id("rules-table")
    expect(rules.locator("tbody tr")).to_have_count(2)
    expect(rules).to_contain_text("no progress for 2m")

    page.locator('button[data-delete="stuck"]').click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(rules.locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("rules-table")).not_to_contain_text("stuck")


def test_a_group_kafka_does_not_know_says_so(lag_page, lag_console):
    page = lag_page
    page.goto("/console/consumers/nobody-here")
    expect(page.get_by_test_id("group-error")).to_contain_text("does not exist")
