"""minConsumingFreshnessTimeMs and numConsumingSegmentsQueried end to end: a REALTIME table
over a 2-partition topic on the local Kafka-protocol broker, with a controller, two servers
and a broker as separate processes. The freshness a query reports is never older than the
messages it counts (their Kafka timestamps, or now once the consumers are caught up), never in
the future, and moves forward as messages are produced."""

from __future__ import annotations

import time

import pytest
import requests

from engine.common.clock import now_ms
from tests.cluster_e2e.realtime_helpers import (
    TABLE,
    Stream,
    create_table,
    new_topic,
    wait_consuming_segments,
    wait_totals,
)

pytestmark = pytest.mark.integration


def freshness(cluster, where: str = "") -> tuple[int, dict]:
    response = cluster.query(f"SELECT COUNT(*) FROM {TABLE} {where}")
    assert not response["exceptions"], response
    return response["minConsumingFreshnessTimeMs"], response


def test_freshness_of_consuming_segments(realtime_cluster, kafka):
    cluster = realtime_cluster
    topic = new_topic(kafka)
    stream = Stream(kafka.bootstrap_servers, topic)
    create_table(cluster, kafka, topic)
    wait_consuming_segments(cluster, 2)

    before = now_ms()
    stream.produce(40)
    wait_totals(cluster, stream.count, stream.total)
    first, response = freshness(cluster)
    assert response["numConsumingSegmentsQueried"] == 2
    # every row counted was produced after ``before``: the freshness is no older than that
    assert before <= first <= now_ms()

    time.sleep(0.5)
    later = now_ms()
    stream.produce(40)
    wait_totals(cluster, stream.count, stream.total)
    second, _ = freshness(cluster)
    assert first < later <= second <= now_ms()
    # a filter that matches nothing still reports how fresh the table's rows are
    filtered, response = freshness(cluster, "WHERE user = 'nobody'")
    assert response["resultTable"]["rows"] == [[0]]
    assert response["numConsumingSegmentsQueried"] == 2
    assert later <= filtered <= now_ms()

    # the broker's Prometheus gauge: how far that last answer trailed the stream
    metrics = requests.get(f"{cluster.broker_url}/metrics", timeout=10).text
    (line,) = [m for m in metrics.splitlines()
               if m.startswith(f'sprig_broker_freshness_lag_ms{{table="{TABLE}"}}')]  # fmt: skip
    lag_ms = float(line.split()[-1])
    assert 0 <= lag_ms <= now_ms() - filtered
