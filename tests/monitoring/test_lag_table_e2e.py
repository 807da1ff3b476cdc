"""The lag history as a queryable time series: the `consumer_offsets` REALTIME table created
from the shipped schema and table config in a real cluster (ZooKeeper, controller, server,
broker as processes), fed by the sampler from the local Kafka, and read by the
minute through the broker. Lags read back equal end offset minus committed offset."""

from __future__ import annotations

import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

import orjson
import pytest

from engine.common.clock import now_ms
from monitoring import history, tables
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler
from tests.cluster_e2e.realtime_helpers import create_topic
from tests.monitoring.conftest import (
    commit,
    produce,
    run_evaluator,
    wait_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_sampled_lag_is_queryable_by_the_minute(lag_cluster, kafka):
    bootstrap = kafka.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    source, samples_topic = f"orders-{suffix}", f"lag-samples-{suffix}"
    for topic, partitions in ((source, 2), (samples_topic, 1)):
        create_topic(bootstrap, topic, partitions)

    assert lag_cluster.controller("POST", "/schemas", json=tables.schema()).ok
    response = lag_cluster.controller(
        "POST", "/tables", json=tables.table_config(bootstrap, samples_topic)
    )
    assert response.ok, response.text

    for partition in (0, 1):
        produce(bootstrap, source, 6, partition)
    group = f"billing-{suffix}"

    # Three polls one minute apart; the group commits between them. Partition 1 is never
    # committed in the first round, so its lag is unknown there (null), not 0.
    base_ms = (now_ms() // history.MINUTE_MS - 5) * history.MINUTE_MS
    ticks = iter([base_ms / 1000 + 60 * i + 1 for i in range(3)])
    sampler = LagSampler(KafkaGroupReader(bootstrap), samples_topic, group,
                         clock=lambda: next(ticks))  # fmt: skip
    expected = {}
    for minute, offsets in enumerate(({0: 1}, {0: 3, 1: 2}, {0: 6, 1: 4})):
        commit(bootstrap, group, source, offsets)
        records = sampler.poll_once()
        sampler.publish(records)
        for r in records:
            expected[(base_ms + minute * history.MINUTE_MS, r["topic"], r["partition"])] = (
                r["offset"], r["logEndOffset"], r["lag"])  # fmt: skip
    assert len(expected) == 5  # partition 1 appears once committed (the group owns no member)

    sql = history.lag_per_minute_sql(group, base_ms, base_ms + 10 * history.MINUTE_MS)
    rows = wait_rows(lag_cluster, sql, len(expected))
    got = {(r["minute"], r["topic"], r["partition"]): (r["committed"], r["endOffset"], r["lag"])
           for r in rows}  # fmt: skip
    assert got == expected
    for committed, end, lag in got.values():
        assert lag == end - committed
    assert [lag for (_, _, p), (_, _, lag) in sorted(got.items()) if p == 0] == [5, 3, 0]

    series = history.lag_series(rows)
    assert [point["lag"] for point in series[f"{source}/1"]] == [4, 2]

    # Another group's samples are not mixed in; a group name with a quote is a literal.
    other = wait_rows(lag_cluster, history.lag_per_minute_sql("x' OR '1'='1", 0, 2**62), 0)
    assert other == []
    stored = history.samples_by_partition(
        wait_rows(lag_cluster, history.samples_sql(group, 0, 2**62), 5)
    )
    assert {tp: [s.committed for s in rows] for tp, rows in stored.items()} == {
        (source, 0): [1, 3, 6], (source, 1): [2, 4],
    }  # fmt: skip


class Webhook:
    """A real HTTP server collecting the JSON bodies POSTed to it."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                received.append(orjson.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_controller_serves_groups_status_history_and_alerts_that_fire_and_resolve(
    lag_cluster, kafka
):
    bootstrap = kafka.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    source, samples_topic = f"payments-{suffix}", f"lag-samples-{suffix}"
    for topic in (source, samples_topic):
        create_topic(bootstrap, topic, 1)
    assert lag_cluster.controller("POST", "/schemas", json=tables.schema()).ok
    assert lag_cluster.controller(
        "POST", "/tables", json=tables.table_config(bootstrap, samples_topic)
    ).ok
    produce(bootstrap, source, 8)
    group = f"ledger-{suffix}"
    commit(bootstrap, group, source, {0: 2})
    sampler = LagSampler(KafkaGroupReader(bootstrap), samples_topic, f"ledger-{suffix}")
    sampler.publish(sampler.poll_once())
    sql = history.samples_sql(group, 0, 2**62)
    wait_rows(lag_cluster, sql, 1)

    # One stored commit, behind, and time has passed since: Burrow's STOP (reported as ERR
    # for the group), since the time since the last commit exceeds the window's span (0).
    listed = lag_cluster.controller("GET", "/consumerGroups").json()["groups"]
    mine = [g for g in listed if g["group"] == group]
    assert mine == [{"group": group, "state": "Empty", "members": 0, "partitionCount": 1,
                     "totalLag": 6, "status": "ERR", "historyError": None}]  # fmt: skip
    described = lag_cluster.controller("GET", f"/consumerGroups/{group}").json()
    assert [(p["topic"], p["partition"], p["committed"], p["endOffset"], p["lag"], p["status"])
            for p in described["partitions"]] == [(source, 0, 2, 8, 6, "STOP")]  # fmt: skip
    assert lag_cluster.controller("GET", "/consumerGroups/no-such-group").status_code == 404
    lag_history = lag_cluster.controller(
        "GET", f"/consumerGroups/{group}/lagHistory", params={"minutes": 5}
    ).json()
    assert [p["lag"] for p in lag_history["series"][f"{source}/0"]] == [6]

    webhook = Webhook()
    rule = {"name": f"behind-{suffix}", "groupPattern": "ledger-*", "condition": "lag > 3",
            "webhookUrl": webhook.url}  # fmt: skip
    assert lag_cluster.controller("POST", "/consumerLagAlerts/rules", json=rule).status_code == 201
    assert run_evaluator(lag_cluster) == {rule["name"]: [f"{group} firing"]}
    assert run_evaluator(lag_cluster) == {}  # still firing: no new transition

    commit(bootstrap, group, source, {0: 8})
    sampler.publish(sampler.poll_once())
    wait_rows(lag_cluster, sql, 2)
    assert run_evaluator(lag_cluster) == {rule["name"]: [f"{group} resolved"]}

    events = lag_cluster.controller("GET", "/consumerLagAlerts/events").json()["events"]
    assert [(e["rule"], e["group"], e["state"], e["value"]) for e in events] == [
        (rule["name"], group, "resolved", 0.0), (rule["name"], group, "firing", 6.0),
    ]  # fmt: skip
    assert [(w["state"], w["group"], w["detail"]) for w in webhook.received] == [
        ("firing", group, "lag 6"), ("resolved", group, "lag 0"),
    ]  # fmt: skip
    webhook.server.shutdown()
