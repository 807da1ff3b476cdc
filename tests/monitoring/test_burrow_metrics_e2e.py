"""Burrow's HTTP API and kafka-lag-exporter's metrics served by a real controller (a process,
with ZooKeeper, a server and a broker) watching the session's Kafka through the
consumer_offsets table, fed by the collector. A group that committed once and then sat behind
is STOP (ERR); once it commits up to the end it is OK."""

from __future__ import annotations

import uuid

import pytest

from monitoring import history
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.lag_table import ensure_lag_table
from monitoring.sampler import LagSampler
from tests.cluster_e2e.realtime_helpers import create_topic
from tests.monitoring.conftest import commit, produce, wait_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]


README_SQL = """
SELECT DATETRUNC('MINUTE', commitTimestamp) AS "minute", SUM("offset") AS "offset", SUM(lag) AS lag
FROM consumer_offsets
WHERE "group" = 'billing' AND commitTimestamp >= ago('P1D')
GROUP BY DATETRUNC('MINUTE', commitTimestamp)
ORDER BY DATETRUNC('MINUTE', commitTimestamp)
LIMIT 1440
"""


def test_burrow_status_lag_and_prometheus_series(lag_cluster, kafka):
    bootstrap = kafka.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topic, samples, group = f"orders-{suffix}", f"samples-{suffix}", f"billing-{suffix}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, 10)
    commit(bootstrap, group, topic, {0: 4})
    assert ensure_lag_table(lag_cluster.controller_url, bootstrap, samples)
    sampler = LagSampler(KafkaGroupReader(bootstrap), samples, groups=group)
    for _ in range(2):
        sampler.publish(sampler.poll_once())
    wait_rows(lag_cluster, history.samples_sql(group, 0, 2**62), 2)

    # the README's query: a group's offsets summed per minute over the last day, one statement
    rows = history.rows_of(lag_cluster.query(README_SQL.replace("billing", group)))
    assert sum(r["offset"] for r in rows) == 8 and sum(r["lag"] for r in rows) == 12
    assert all(r["minute"] % 60_000 == 0 for r in rows)

    def get(path: str):
        return lag_cluster.controller("GET", path)

    assert get("/v3/kafka").json()["clusters"] == ["local"]
    consumers = get("/v3/kafka/local/consumer").json()
    assert consumers["message"] == "consumer list returned" and group in consumers["consumers"]

    stopped = get(f"/v3/kafka/local/consumer/{group}/status")
    assert stopped.status_code == 200
    status = stopped.json()["status"]
    assert (status["status"], status["totallag"], status["partition_count"]) == ("ERR", 6, 1)
    [partition] = status["partitions"]
    assert (partition["topic"], partition["partition"], partition["status"]) == (topic, 0, "STOP")
    assert partition["end"]["offset"] == 4 and partition["end"]["lag"] == 6
    assert partition["current_lag"] == 6 and status["maxlag"]["partition"] == 0

    commit(bootstrap, group, topic, {0: 10})  # caught up
    ok = get(f"/v3/kafka/local/consumer/{group}/status").json()
    assert ok["error"] is False and ok["message"] == "consumer status returned"
    assert ok["request"]["url"] == f"/v3/kafka/local/consumer/{group}/status"
    assert (ok["status"]["status"], ok["status"]["partitions"], ok["status"]["totallag"]) == (
        "OK", [], 0)  # fmt: skip
    lag = get(f"/v3/kafka/local/consumer/{group}/lag").json()["status"]
    assert [(p["status"], p["end"]["offset"], p["current_lag"]) for p in lag["partitions"]] == [
        ("OK", 10, 0)]  # fmt: skip
    # the window starts at the stored commit of 4, unless the commit of 10 came within
    # Burrow's min-distance (1 s) of it and took its slot
    assert lag["partitions"][0]["start"]["offset"] in (4, 10)

    missing = get("/v3/kafka/local/consumer/nobody-{suffix}/lag")
    assert missing.status_code == 404 and missing.json()["status"]["status"] == "NOTFOUND"
    assert get(f"/v3/kafka/elsewhere/consumer/{group}/status").status_code == 404
    assert get("/v3/kafka/elsewhere/consumer").json()["message"] == "cluster not found"

    metrics = get("/metrics").text
    labels = (f'cluster_name="local",group="{group}",topic="{topic}",partition="0",'
              'member_host="unknown",consumer_id="unknown",client_id="unknown"')  # fmt: skip
    assert f"kafka_consumergroup_group_offset{{{labels}}} 10" in metrics
    assert f"kafka_consumergroup_group_lag{{{labels}}} 0" in metrics
    assert f"kafka_consumergroup_group_lag_seconds{{{labels}}} 0.0" in metrics
    assert (
        f'kafka_partition_latest_offset{{cluster_name="local",topic="{topic}",partition="0"}} 10'
        in metrics
    )
    assert "pinot_controller_" in metrics or "# TYPE" in metrics  # the controller's own series stay
