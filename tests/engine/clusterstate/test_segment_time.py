"""A segment's start and end time in epoch ms, read from its ZooKeeper metadata by one rule
(engine.clusterstate.segment_metadata) for the broker's pruning and time boundary, retention
and the MergeRollup and RealtimeToOffline generators. Where the four former copies disagreed:

- a missing or unknown ``segment.time.unit``: the broker treated the range as unknown; the
  two generators and retention assumed MILLISECONDS, so retention could delete a segment on a
  guessed unit. Pinot fails on such a unit (retention keeps the segment): unknown for all.
- a time of 0 or less (old records hold -1): the copies converted it; Pinot reads it as
  unknown (-1), so no caller acts on it.
- NANOSECONDS: the generators rounded, the broker kept the fraction; the rule is exact and the
  generators round where they need whole milliseconds, as before.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pyarrow as pa
import pytest

from engine.broker.pruning import prune
from engine.broker.routes import segment_info_from_metadata
from engine.clusterstate import SegmentZKMetadata
from engine.clusterstate.segment_metadata import recorded_time_range, segment_time_ms
from engine.query.plan import compile_query
from engine.segment import build_segment
from engine.spi import Schema, TableConfig
from engine.spi.datetime_format import DateTimeFormat

DAY = 86_400_000
D0 = 16071  # 2014-01-01 in days


@pytest.mark.parametrize(
    ("value", "unit", "ms"),
    [
        (D0, "DAYS", D0 * DAY),
        (D0, "days", D0 * DAY),  # the copies all read the unit case-insensitively
        (1_400_000_000, "SECONDS", 1_400_000_000_000),
        (1_500_000, "NANOSECONDS", 1.5),  # exact, never rounded for the broker
        (1_388_534_400_000, "MILLISECONDS", 1_388_534_400_000),
        (None, "DAYS", None),
        (0, "MILLISECONDS", None),  # Pinot: not positive, unknown (the copies said 0)
        (-1, "", None),
        (1_388_534_400_000, "", None),  # no unit: the generators and retention said ms
        (1_388_534_400_000, None, None),
        (D0, "FORTNIGHTS", None),  # not a TimeUnit: the generators and retention said ms
    ],
)
def test_segment_time_ms(value, unit, ms):
    assert segment_time_ms(value, unit) == ms


def meta(name: str, start, end, unit: str, table: str = "t_OFFLINE", **extra) -> SegmentZKMetadata:
    return SegmentZKMetadata(name, table, total_docs=10, start_time=start, end_time=end,
                             time_unit=unit, download_url=f"http://c/{name}",
                             extra=extra)  # fmt: skip


def test_properties_read_the_record():
    record = meta("s", D0, D0 + 1, "DAYS")
    assert (record.start_time_ms, record.end_time_ms) == (D0 * DAY, (D0 + 1) * DAY)
    again = SegmentZKMetadata.from_record(record.to_record(), "t_OFFLINE")
    assert (again.start_time_ms, again.end_time_ms) == (D0 * DAY, (D0 + 1) * DAY)


def test_the_broker_never_time_prunes_a_segment_of_unknown_range():
    assert segment_info_from_metadata(meta("s", D0, D0, "DAYS")).start_ms == D0 * DAY
    for unknown in (meta("s", D0, D0, ""), meta("s", 0, D0, "DAYS"), meta("s", D0, D0, "x")):
        info = segment_info_from_metadata(unknown)
        assert (info.start_ms, info.end_ms) == (None, None)
        kept = prune([info], compile_query("SELECT COUNT(*) FROM t WHERE d = 1").filter,
                     time_column="d", time_unit_ms=DAY, partitioning={})  # fmt: skip
        assert kept == [info]


class Store:
    """The ZooKeeper reads of retention and the generators, in memory."""

    def __init__(self, table: str, metas: list[SegmentZKMetadata], ideal=None):
        self.table = table
        self.metas = {m.segment_name: m for m in metas}
        self.ideal = ideal
        self.paths = SimpleNamespace(segment_lineage=lambda t: f"/lineage/{t}")

    def segment_names(self, table):
        return sorted(self.metas)

    def segment_metadata(self, table, segment):
        return self.metas.get(segment)

    def ideal_state(self, table):
        return self.ideal

    def get_record(self, path):
        return None, -1


NOW = 1_800_000_000_000  # 2027


def test_retention_keeps_what_it_cannot_date():
    from cluster.logic.apply_retention import expired_segments

    old_days = (NOW - 400 * DAY) // DAY
    metas = [
        meta("old", old_days, old_days, "DAYS"),
        meta("old_ms_no_unit", 1, 1_400_000_000_000, ""),  # was deleted as ms
        meta("old_bad_unit", 1, 1_400_000_000_000, "FORTNIGHTS"),  # was deleted as ms
        meta("before_1971", 1, 1_000, "MILLISECONDS"),  # a wrong unit: Pinot keeps it
        meta("recent", old_days + 399, old_days + 399, "DAYS"),
        meta("no_end", 1, None, "DAYS"),
    ]
    config = {"tableName": "t", "tableType": "OFFLINE",
              "segmentsConfig": {"retentionTimeUnit": "DAYS", "retentionTimeValue": "30"}}  # fmt: skip
    row = SimpleNamespace(config=config, name_with_type="t_OFFLINE", table_type="OFFLINE")
    assert expired_segments(Store("t_OFFLINE", metas), row, NOW) == ["old"]


def _ctx(table: str, metas: list[SegmentZKMetadata]):
    return SimpleNamespace(store=Store(table, metas), table_name=table)


def test_merge_rollup_reads_only_segments_it_can_date():
    from tasks.generators.merge_rollup import candidate_segments

    metas = [meta("days", D0, D0, "DAYS"), meta("no_unit", D0 * DAY, D0 * DAY, ""),
             meta("nanos", 1_388_534_400_000_000_500, 1_388_534_400_000_000_500, "NANOSECONDS")]  # fmt: skip
    got = candidate_segments(_ctx("t_OFFLINE", metas), {"tableName": "t", "tableType": "OFFLINE"})
    assert [(s.name, s.start_ms, s.end_ms) for s in got] == [
        ("days", D0 * DAY, D0 * DAY),
        ("nanos", 1_388_534_400_000, 1_388_534_400_000),  # whole ms, as before
    ]


def test_merge_rollup_compares_realtime_starts_in_ms():
    from tasks.generators.merge_rollup import candidate_segments

    table = "t_REALTIME"
    done = {"segment.realtime.status": "DONE"}
    consuming = {"segment.realtime.status": "IN_PROGRESS"}
    metas = [
        # one day in SECONDS, the consuming segment in ms: the copy compared raw values,
        # so 1.39e9 (s) looked earlier than 1.39e12 (ms) whatever the real times
        meta("t__0__0__20140101T0000Z", 1_388_534_400, 1_388_620_799, "SECONDS", table, **done),
        meta("t__0__1__20140101T0000Z", 1_388_620_800, 1_388_707_199, "SECONDS", table, **done),
        meta("t__0__2__20140101T0000Z", 1_388_620_800_000, 1_388_707_199_000, "MILLISECONDS", table,
             **consuming),
    ]  # fmt: skip
    got = candidate_segments(_ctx(table, metas), {"tableName": "t", "tableType": "REALTIME"})
    assert [s.name for s in got] == [
        "t__0__0__20140101T0000Z"
    ]  # the one starting before the consuming one


def test_realtime_to_offline_reads_only_segments_it_can_date():
    from tasks.generators.realtime_to_offline import completed_segments

    table = "t_REALTIME"
    done = {"segment.realtime.status": "DONE"}
    metas = [meta("t__0__0__20140101T0000Z", 1_388_534_400, 1_388_620_799, "SECONDS", table, **done),
             meta("t__1__0__20140101T0000Z", 1_388_534_400_000, 1_388_620_799_000, "", table, **done)]  # fmt: skip
    assert completed_segments(_ctx(table, metas)) == [
        (
            0,
            0,
            1_388_534_400_000,
            1_388_620_799_000,
            "t__0__0__20140101T0000Z",
            "http://c/t__0__0__20140101T0000Z",
        )
    ]


# --- what the controller records: a range that reads back true -----------------------------

SCHEMA = Schema.from_json({
    "schemaName": "t", "dimensionFieldSpecs": [{"name": "d", "dataType": "STRING"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "5:MINUTES:EPOCH",
                            "granularity": "5:MINUTES"}],
})  # fmt: skip
CONFIG = TableConfig.from_json(
    {"tableName": "t", "tableType": "OFFLINE", "segmentsConfig": {"timeColumnName": "ts"}}
)


def test_a_multi_unit_epoch_column_is_recorded_in_ms_and_prunes_like_a_scan(tmp_path):
    """``5:MINUTES:EPOCH``: 100 is minute 500. Recorded as Pinot does (100, MINUTES) the range
    read back five times too early, and the broker pruned a segment holding matching rows."""
    values = [100, 130, 200]
    built = build_segment(pa.table({"d": ["a", "b", "c"], "ts": values}), SCHEMA, CONFIG,
                          tmp_path).metadata  # fmt: skip
    start, end, unit = recorded_time_range(built.start_time, built.end_time, built.time_unit,
                                           built.start_time_ms, built.end_time_ms)  # fmt: skip
    assert (start, end, unit) == (100 * 300_000, 200 * 300_000, "MILLISECONDS")
    info = segment_info_from_metadata(meta("s", start, end, unit))
    unit_ms = DateTimeFormat.parse("5:MINUTES:EPOCH").unit_millis  # the route's time_unit_ms
    for sql_filter, holds in [
        ("ts >= 150", lambda v: v >= 150),
        ("ts = 130", lambda v: v == 130),
        ("ts < 100", lambda v: v < 100),
        ("ts > 200", lambda v: v > 200),
        ("ts BETWEEN 201 AND 300", lambda v: 201 <= v <= 300),
        ("ts BETWEEN 0 AND 100", lambda v: 0 <= v <= 100),
        ("ts <= 99", lambda v: v <= 99),
        ("ts IN (1, 200)", lambda v: v in (1, 200)),
    ]:
        query = compile_query(f"SELECT COUNT(*) FROM t WHERE {sql_filter}")
        kept = prune([info], query.filter, time_column="ts", time_unit_ms=unit_ms,
                     partitioning={})  # fmt: skip
        # never pruned while a row matches (a strict bound may keep it: never a wrong answer)
        assert kept or not any(holds(v) for v in values), sql_filter
        if sql_filter in ("ts BETWEEN 201 AND 300", "ts <= 99"):
            assert not kept, sql_filter  # and the true range still prunes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ((D0, D0 + 3, "DAYS", D0 * DAY, (D0 + 3) * DAY), (D0, D0 + 3, "DAYS")),  # as Pinot
        ((1_500_000, 2_500_000, "NANOSECONDS", 1, 2), (1_500_000, 2_500_000, "NANOSECONDS")),
        # a DOUBLE seconds column: int() cut 0.7 s off the end
        (
            (1.4e9, 1.4e9 + 10.7, "SECONDS", 1.4e12, 1.4e12 + 10_700),
            (1_400_000_000_000, 1_400_000_010_700, "MILLISECONDS"),
        ),
        ((None, None, None, None, None), (None, None, "")),  # no time column
        ((5, 7, None, None, None), (5, 7, "")),  # no format: nothing to convert with
    ],
)
def test_recorded_time_range(raw, expected):
    assert recorded_time_range(*raw) == expected
    start, end, unit = expected
    if unit:
        assert math.floor(segment_time_ms(start, unit)) <= raw[3]
        assert math.ceil(segment_time_ms(end, unit)) >= raw[4]
