"""Pinot's numConsumingSegmentsQueried (added up) and minConsumingFreshnessTimeMs (the least
of the consuming segments', else a committed stand-in, 0 when nothing is known): per
server, then merged at the broker."""

from __future__ import annotations

import types

import pyarrow as pa

from engine.query.intermediate import FRESHNESS_KEY, IntermediateResult, merge_stats
from engine.query.response import broker_response
from engine.realtime import MutableSegment
from engine.server.query import _consuming_stats
from engine.spi import Schema, TableConfig

SCHEMA = Schema.from_json(
    {"schemaName": "t", "dimensionFieldSpecs": [{"name": "k", "dataType": "INT"}]}
)
CONFIG = TableConfig.from_json({
    "tableName": "t", "tableType": "REALTIME",
    "tableIndexConfig": {"streamConfigs": {
        "streamType": "kafka", "stream.kafka.topic.name": "t",
        "stream.kafka.decoder.class.name":
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
    }},
})  # fmt: skip


def consuming(name: str, stamp: int | None, caught_up: bool = False):
    segment = MutableSegment(name, SCHEMA, CONFIG)
    if stamp is not None:
        segment.index(pa.table({"k": pa.array([1], pa.int32())}), ingestion_ms=stamp)
    segment.caught_up = caught_up
    return segment.snapshot()


class Immutable:  # an ONLINE segment: no freshness; its creation, the end of its time column
    def __init__(self, end_time_ms: int | None = None, creation_time: int | None = None):
        self.metadata = types.SimpleNamespace(end_time_ms=end_time_ms, creation_time=creation_time)


def test_server_reports_the_oldest_consuming_segment_and_their_number():
    stats = {}
    segments = [consuming("a", 5_000), consuming("b", 3_000), Immutable(), consuming("c", None)]
    _consuming_stats(stats, segments)
    assert stats == {"numConsumingSegmentsQueried": 3, FRESHNESS_KEY: 3_000}


def test_an_idle_caught_up_partition_is_as_fresh_as_now():
    stats = {}
    _consuming_stats(stats, [consuming("a", 5_000, caught_up=True)])
    assert stats[FRESHNESS_KEY] > 1_700_000_000_000


def test_committed_segments_only_report_their_newest_creation_or_end_on_a_realtime_table():
    stats = {}
    _consuming_stats(stats, [Immutable(4_000), Immutable(6_000), Immutable()])
    assert stats == {"numConsumingSegmentsQueried": 0, FRESHNESS_KEY: 6_000}
    # Pinot's indexCreationTime first: a committed segment was built when it stopped consuming
    _consuming_stats(stats, [Immutable(4_000, creation_time=9_000), Immutable(6_000)])
    assert stats[FRESHNESS_KEY] == 9_000
    # a consuming segment with no row yet: the committed segments beside it stand in
    _consuming_stats(stats, [consuming("a", None), Immutable(4_000, creation_time=8_000)])
    assert stats == {"numConsumingSegmentsQueried": 1, FRESHNESS_KEY: 8_000}
    _consuming_stats(stats, [Immutable()])  # no time column: nothing known
    assert stats[FRESHNESS_KEY] == 0
    _consuming_stats(stats, [Immutable(4_000)], realtime=False)  # OFFLINE: not reported
    assert stats == {"numConsumingSegmentsQueried": 0, FRESHNESS_KEY: 0}


def test_broker_takes_the_least_freshness_and_adds_the_counts():
    merged = merge_stats([
        {"numConsumingSegmentsQueried": 2, FRESHNESS_KEY: 9_000, "totalDocs": 4},
        {"numConsumingSegmentsQueried": 0, FRESHNESS_KEY: 0, "totalDocs": 1},  # offline only
        {"numConsumingSegmentsQueried": 1, FRESHNESS_KEY: 7_000, "totalDocs": 2},
    ])  # fmt: skip
    assert merged[FRESHNESS_KEY] == 7_000
    assert merged["numConsumingSegmentsQueried"] == 3 and merged["totalDocs"] == 7
    response = broker_response(["c"], ["LONG"], [[1]], stats=merged)
    assert response["minConsumingFreshnessTimeMs"] == 7_000
    assert response["numConsumingSegmentsQueried"] == 3
    assert broker_response(["c"], ["LONG"], [[1]])["minConsumingFreshnessTimeMs"] == 0


def test_a_server_without_consuming_segments_never_sets_the_answers_freshness():
    """The consuming segment on one server, the committed ones on the other (replicas
    balanced segment by segment): the committed segments' stand-in is older than the stream
    and must not be taken as the answer's freshness (issue 27)."""
    consuming_part = {"numConsumingSegmentsQueried": 1, FRESHNESS_KEY: 9_000}
    committed_part = {"numConsumingSegmentsQueried": 0, FRESHNESS_KEY: 3_000}
    assert merge_stats([committed_part, consuming_part])[FRESHNESS_KEY] == 9_000
    # no server read a consuming segment (one is handing over to the next): the newest
    # committed data anywhere is the stand-in, as on one server
    other = {"numConsumingSegmentsQueried": 0, FRESHNESS_KEY: 5_000}
    assert merge_stats([committed_part, other])[FRESHNESS_KEY] == 5_000
    assert merge_stats([committed_part, {"numConsumingSegmentsQueried": 0}])[FRESHNESS_KEY] == (
        3_000
    )


def test_freshness_travels_from_server_to_broker():
    result = IntermediateResult("selection", stats={**merge_stats([]), FRESHNESS_KEY: 1234})
    result.rows = pa.table({"k": pa.array([1])})
    back = IntermediateResult.from_bytes(result.to_bytes(None))
    assert back.stats[FRESHNESS_KEY] == 1234
