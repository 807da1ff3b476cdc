"""minConsumingFreshnessTimeMs and numConsumingSegmentsQueried end to end: a REALTIME table
over a 2-partition topic on the local Kafka, with a controller, two servers
and a broker as separate processes. The freshness a query reports is never older than the
messages it counts (their Kafka timestamps, or now once the consumers are caught up), never in
the future, and moves forward as messages are produced."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
import requests

from engine.common.clock import now_ms
from sprig.stack.producer import (
    SampleStream,
    airline_flights,
    fresh_flight,
    fresh_github_event,
    github_events,
)
from tests.cluster_e2e.conftest import start_cluster, stop_cluster
from tests.cluster_e2e.realtime_helpers import (
    TABLE,
    Stream,
    create_table,
    create_topic,
    new_topic,
    wait_consuming_segments,
    wait_totals,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stream_cluster(zookeeper, kafka, tmp_path_factory):
    """Controller, two servers and a broker shared by this module's tests (each has its own
    tables and topics)."""
    running = start_cluster(zookeeper.address, tmp_path_factory.mktemp("freshness"), servers=2)
    try:
        yield running
    finally:
        stop_cluster(running)


def freshness(cluster, where: str = "") -> tuple[int, dict]:
    response = cluster.query(f"SELECT COUNT(*) FROM {TABLE} {where}")
    assert not response["exceptions"], response
    return response["minConsumingFreshnessTimeMs"], response


def test_freshness_of_consuming_segments(stream_cluster, kafka):
    cluster = stream_cluster
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


# --- the quickstart's two stream tables, as Pinot ships them, through segment rollovers ------
STREAM_RATE = 20  # records a second into each topic, by the quickstart's producer
ROLLOVERS = 2  # new consuming segments to see per table
MAX_LAG_MS = 2_000


def pinot_stream_table(pinot_examples, folder: str, table: str, kafka, flush: dict):
    """Pinot's schema and REALTIME config of ``table`` from ``folder``, created on a fresh
    topic of the session's Kafka with two replicas, as the quickstart does, and the ``flush``
    thresholds (seconds where the examples say hours). Returns the topic."""
    schema = orjson.loads((pinot_examples / folder / f"{table}_schema.json").read_bytes())
    config = orjson.loads(
        (pinot_examples / folder / f"{table}_realtime_table_config.json").read_bytes()
    )
    streams = config.get("ingestionConfig", {}).get("streamIngestionConfig")
    stream_map = (
        streams["streamConfigMaps"][0] if streams else config["tableIndexConfig"]["streamConfigs"]
    )
    topic = create_topic(kafka.bootstrap_servers, f"{table}_{uuid.uuid4().hex[:8]}", 1)
    stream_map.update(flush)
    stream_map["stream.kafka.broker.list"] = kafka.bootstrap_servers
    stream_map["stream.kafka.topic.name"] = topic
    config["segmentsConfig"]["replication"] = config["segmentsConfig"]["replicasPerPartition"] = "2"
    return schema, config, topic


class FreshnessWatch:
    """The answers to ``SELECT COUNT(*)`` on one REALTIME table, each checked as it comes:
    under 2 s behind the stream, and numConsumingSegmentsQueried and the freshness agreeing
    with the servers' parts in ``traceInfo``."""

    def __init__(self, cluster, table: str):
        self.cluster, self.table = cluster, table
        self.series: list[tuple] = []  # (s, COUNT(*), numConsumingSegmentsQueried, lag ms)
        self.newest: list[str] = []  # the newest segment queried, as it changed
        self.split_seen = False
        self.started = time.monotonic()

    @property
    def rollovers(self) -> int:
        return len(self.newest) - 1

    def check_one(self) -> None:
        response = self.cluster.query(f"SELECT COUNT(*) FROM {self.table}_REALTIME", trace="true")
        lag_ms = now_ms() - response["minConsumingFreshnessTimeMs"]
        consuming = response["numConsumingSegmentsQueried"]
        assert not response["exceptions"], response
        self.series.append((round(time.monotonic() - self.started, 1),
                            response["resultTable"]["rows"][0][0], consuming, lag_ms))  # fmt: skip
        assert -100 <= lag_ms < MAX_LAG_MS, f"{self.table}: lag {lag_ms} ms: {self.series}"
        servers = response["traceInfo"]
        queried = {s["segment"]: server for server, e in servers.items() for s in e["segments"]}
        newest = max(queried, key=lambda name: int(name.split("__")[2]))  # its LLC sequence
        if not self.newest or self.newest[-1] != newest:
            self.newest.append(newest)
        # one partition: one consuming segment, or, while it hands over to the next, none or
        # the two; each server's trace says how many it read and how fresh they were
        assert consuming in (0, 1, 2)
        assert sum(e["numConsumingSegmentsQueried"] for e in servers.values()) == consuming
        if consuming:
            assert servers[queried[newest]]["numConsumingSegmentsQueried"], servers
            assert response["minConsumingFreshnessTimeMs"] == min(
                e["minConsumingFreshnessTimeMs"]
                for e in servers.values() if e["numConsumingSegmentsQueried"]
            ), servers  # fmt: skip
        # the consuming segment on one server and a committed one on the other: the case that
        # stood still, when the other server's stand-in was taken as the answer's freshness
        self.split_seen |= consuming == 1 and len(set(queried.values())) == 2

    def check_series(self) -> None:
        assert self.split_seen, f"{self.table}: never split over the servers: {self.series}"
        one = sum(1 for _, _, consuming, _ in self.series if consuming == 1)
        assert one >= 0.7 * len(self.series), f"{self.table}: long handovers: {self.series}"
        print(f"\n{self.table}: (s, COUNT(*), numConsumingSegmentsQueried, lag ms)")
        print("\n".join(map(str, self.series)))


def test_freshness_of_the_quickstart_tables_across_rollovers(stream_cluster, kafka,
                                                             pinot_examples):  # fmt: skip
    """githubEvents (a segment per flush time; its time column made by a transform) and
    airlineStats (a segment per row count; a time column in days), while the quickstart's
    producer streams: every answer is under 2 s behind the stream, before, during and after
    each segment rollover."""
    cluster = stream_cluster
    github = pinot_stream_table(pinot_examples, "minions/stream/githubEvents", "githubEvents",
                                kafka, {"realtime.segment.flush.threshold.time": "5s",
                                        "realtime.segment.flush.threshold.size": "100000"})  # fmt: skip
    airline = pinot_stream_table(pinot_examples, "stream/airlineStats", "airlineStats", kafka,
                                 {"realtime.segment.flush.threshold.size": str(STREAM_RATE * 5)})  # fmt: skip
    for schema, config, _ in (github, airline):
        assert cluster.controller("POST", "/schemas", json=schema).ok
        response = cluster.controller("POST", "/tables", json=config)
        assert response.ok, response.text
    rawdata = pinot_examples / "stream"
    streams = [
        SampleStream(kafka.bootstrap_servers, github[2],
                     github_events(rawdata / "githubEvents/rawdata/2021-07-21-few-hours.json"),
                     fresh_github_event, STREAM_RATE).start(),
        SampleStream(kafka.bootstrap_servers, airline[2],
                     airline_flights(rawdata / "airlineStats/rawdata/airlineStats_data.avro"),
                     fresh_flight, STREAM_RATE).start(),
    ]  # fmt: skip
    try:
        watches = [FreshnessWatch(cluster, "githubEvents"), FreshnessWatch(cluster, "airlineStats")]
        for watch in watches:
            wait_until(lambda w=watch: cluster.query(f"SELECT COUNT(*) FROM {w.table}_REALTIME")
                       ["numConsumingSegmentsQueried"], f"{watch.table} consuming")  # fmt: skip
        deadline = time.monotonic() + 60
        while any(w.rollovers < ROLLOVERS for w in watches):
            assert time.monotonic() < deadline, [(w.table, w.series) for w in watches]
            for watch in watches:
                watch.check_one()
            time.sleep(0.4)
    finally:
        for stream in streams:
            stream.stop()
    for watch in watches:
        watch.check_series()
