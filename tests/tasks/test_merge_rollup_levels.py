"""MergeRollupTask's planning rules: levels from the task config (errors name the key),
windows after the watermark bounded by the buffer and the lower level, segment selection,
and Pinot's output names."""

from __future__ import annotations

import pytest

from tasks.errors import TaskConfigError
from tasks.generators.merge_rollup_levels import (
    SegmentInfo,
    aggregation_types,
    cold_start_watermark,
    output_segment_name,
    parse_levels,
    plan_windows,
    select_segments,
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


def test_windows_follow_the_watermark_buffer_and_lower_level():
    hour, day = parse_levels(CONFIG)
    start = cold_start_watermark(10 * DAY + 5 * HOUR, DAY)
    assert start == 10 * DAY
    now = 14 * DAY + HOUR
    # buckets must end by now - 1d buffer: days 10, 11, 12 (3 in parallel at most)
    assert plan_windows(day, start, now) == [(10 * DAY, 11 * DAY), (11 * DAY, 12 * DAY),
                                             (12 * DAY, 13 * DAY)]  # fmt: skip
    # ... and no later than the lower level's watermark
    assert plan_windows(day, start, now, lower_watermark_ms=11 * DAY + HOUR) == [
        (10 * DAY, 11 * DAY)]  # fmt: skip
    assert plan_windows(day, 13 * DAY, now) == []
    assert plan_windows(hour, 14 * DAY - 3 * HOUR, now) == [(14 * DAY - 3 * HOUR,
                                                             14 * DAY - 2 * HOUR)]  # fmt: skip


def test_segment_selection_and_names():
    segments = [
        SegmentInfo("a", 10 * DAY, 10 * DAY + HOUR),
        SegmentInfo("b", 10 * DAY + 2 * HOUR, 11 * DAY - 1, merge_level="1hour"),
        SegmentInfo("c", 10 * DAY, 10 * DAY + HOUR, merge_level="1day"),  # done at this level
        SegmentInfo("d", 10 * DAY + HOUR, 11 * DAY),  # crosses the window end
    ]
    order = ["1hour", "1day"]
    assert select_segments(segments, (10 * DAY, 11 * DAY), "1day", order) == ["a", "b"]
    assert select_segments(segments, (10 * DAY, 11 * DAY), "1hour", order) == ["a"]
    assert output_segment_name("1day", 1700000000000, 0, "airlineStats") == (
        "merged_1day_1700000000000_0_airlineStats")  # fmt: skip
    assert output_segment_name("1day", 17, 2, "t", partition=3) == "merged_1day_17_3_2_t"
