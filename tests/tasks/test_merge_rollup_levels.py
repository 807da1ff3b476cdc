"""MergeRollupTask's planning rules: levels from the task config (errors name the key),
buckets after the watermark bounded by the buffer, the lower level and
maxNumParallelBuckets, merged buckets skipped, spilled-over segments, partition groups,
maxNumRecordsPerTask runs and Pinot's output name prefix."""

from __future__ import annotations

import dataclasses

import pytest

from tasks.errors import TaskConfigError
from tasks.generators.merge_rollup_levels import (
    SegmentInfo,
    aggregation_types,
    cold_start_watermark,
    parse_levels,
    partition_groups,
    plan_buckets,
    segment_name_prefix,
    split_by_records,
)

HOUR, DAY = 3_600_000, 86_400_000
CONFIG = {
    "1day.mergeType": "rollup", "1day.bucketTimePeriod": "1d", "1day.bufferTimePeriod": "1d",
    "1day.maxNumParallelBuckets": "3", "1day.eraseDimensionValues": "Origin, Dest",
    "1hour.mergeType": "concat", "1hour.bucketTimePeriod": "1h", "1hour.bufferTimePeriod": "3h",
    "ArrDelay.aggregationType": "max", "schedule": "0 */10 * * * ?",
}  # fmt: skip


def test_levels_run_from_the_shortest_bucket_up():
    hour, day = parse_levels(CONFIG)
    assert (hour.name, hour.merge_type, hour.bucket_ms, hour.buffer_ms) == (
        "1hour", "concat", HOUR, 3 * HOUR)  # fmt: skip
    assert (day.name, day.merge_type, day.max_parallel_buckets) == ("1day", "rollup", 3)
    assert day.erase_dimensions == ("Origin", "Dest")
    assert day.max_records_per_segment == 5_000_000
    assert aggregation_types(CONFIG) == {"ArrDelay": "max"}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"1day.bucketTimePeriod": None}, "MergeRollupTask.1day.bucketTimePeriod"),
        ({"1day.bufferTimePeriod": "soon"}, "MergeRollupTask.1day.bufferTimePeriod"),
        ({"1day.mergeType": "squash"}, "MergeRollupTask.1day.mergeType"),
        ({"1day.maxNumRecordsPerSegment": "0"}, "MergeRollupTask.1day.maxNumRecordsPerSegment"),
        ({"ArrDelay.aggregationType": "avg"}, "MergeRollupTask.ArrDelay.aggregationType"),
    ],
)
def test_a_wrong_value_names_its_key(change, key):
    config = {k: v for k, v in {**CONFIG, **change}.items() if v is not None}
    with pytest.raises(TaskConfigError) as caught:
        parse_levels(config)
        aggregation_types(config)
    assert caught.value.key == key


def test_no_level_is_an_error():
    with pytest.raises(TaskConfigError, match="no merge level"):
        parse_levels({"schedule": "0 0 * * * ?"})


def day_segments(days, merged=None):
    return [SegmentInfo(f"s{d}", d * DAY, d * DAY + DAY - 1, merged, 100) for d in days]


def names(buckets):
    return [[s.name for s in bucket] for bucket in buckets]


def test_buckets_follow_the_watermark_buffer_and_parallelism():
    _, day = parse_levels(CONFIG)
    segments = day_segments(range(10, 14))
    start = cold_start_watermark(10 * DAY + 5 * HOUR, DAY)
    assert start == 10 * DAY
    now = 14 * DAY + HOUR
    # buckets must end by now - 1d buffer: days 10, 11, 12 (3 in parallel at most)
    assert names(plan_buckets(segments, day, start, now, None, lowest=True)) == [
        ["s10"], ["s11"], ["s12"]]  # fmt: skip
    one = dataclasses.replace(day, max_parallel_buckets=1)
    assert names(plan_buckets(segments, one, start, now, None, lowest=True)) == [["s10"]]
    # the buffer holds back a bucket that ends too late
    assert plan_buckets(segments, day, 13 * DAY, now, None, lowest=True) == []
    # above the lowest level, a bucket must end by the lower level's watermark
    assert names(plan_buckets(segments, day, start, now, 11 * DAY + HOUR, lowest=False)) == [
        ["s10"]]  # fmt: skip
    assert plan_buckets(segments, day, start, now, None, lowest=False) == []


def test_merged_buckets_are_skipped_and_a_spilled_segment_ends_the_plan():
    _, day = parse_levels(CONFIG)
    now = 30 * DAY
    segments = day_segments([10], merged="1day") + day_segments([11, 12, 13])
    # day 10 is merged at this level already: planning starts at day 11
    assert names(plan_buckets(segments, day, 10 * DAY, now, None, lowest=True)) == [
        ["s11"], ["s12"], ["s13"]]  # fmt: skip
    # merged at another level is not merged at this one (case as Pinot: ignored)
    other = day_segments([10], merged="1HOUR")
    assert names(plan_buckets(other, day, 10 * DAY, now, None, lowest=True)) == [["s10"]]
    # a segment spanning days 11 and 12 is cut by the executor; no bucket after it is planned
    spill = [SegmentInfo("a", 10 * DAY, 10 * DAY + 5, None, 1),
             SegmentInfo("b", 11 * DAY, 12 * DAY + 5, None, 1),
             SegmentInfo("c", 13 * DAY, 13 * DAY + 5, None, 1)]  # fmt: skip
    assert names(plan_buckets(spill, day, 10 * DAY, now, None, lowest=True)) == [["a"], ["b"]]
    # b still spilling (its merge failed), a plan from day 12 stops at it again
    assert names(plan_buckets(spill, day, 12 * DAY, now, None, lowest=True)) == [["b"]]


def test_partition_groups_and_record_runs():
    one = {"Carrier": frozenset({1})}
    segments = [
        SegmentInfo("a", 0, 1, None, 10, "", one),
        SegmentInfo("b", 0, 1, None, 10, "", {"Carrier": frozenset({0})}),
        SegmentInfo("c", 0, 1, None, 10, "", {"Carrier": frozenset({0, 1})}),  # outlier
        SegmentInfo("d", 0, 1, None, 10, "", one),
        SegmentInfo("e", 0, 1, None, 10, ""),  # no partition metadata: outlier
    ]
    groups = partition_groups(segments, ["Carrier"])
    assert [(key, [s.name for s in group]) for key, group in groups] == [
        ((0,), ["b"]), ((1,), ["a", "d"]), (None, ["c", "e"])]  # fmt: skip
    assert partition_groups(segments, []) == [(None, segments)]
    assert names(split_by_records(segments, 25)) == [["a", "b", "c"], ["d", "e"]]
    assert names(split_by_records(segments, 10)) == [["a"], ["b"], ["c"], ["d"], ["e"]]


def test_output_name_prefix():
    assert segment_name_prefix("1day", 1700000000000, 0, "airlineStats") == (
        "merged_1day_1700000000000_0_airlineStats")  # fmt: skip
    assert segment_name_prefix("1day", 17, 2, "t", (3, 1)) == "merged_1day_17_3_1_2_t"
