"""Windows built from lag samples, evaluated as Burrow would: a consumer that keeps up is OK,
a stopped one becomes STOP after its window, a reset one is REWIND; uncommitted partitions are
unknown, never 0."""

import math

import pytest

from monitoring.evaluation.burrow import Status
from monitoring.evaluation.time_lag import EndOffsetTable
from monitoring.evaluation.window import Sample, WindowConfig, build_window, evaluate_samples
from monitoring.lag import monitored_lag, offset_lag, total_lag

CONFIG = WindowConfig(intervals=5)
S = 1000  # ms


def polls(rows, start_s=0, every_s=10):
    """rows of (committed, end offset), one poll every `every_s` seconds."""
    return [
        Sample((start_s + i * every_s) * S, committed, end)
        for i, (committed, end) in enumerate(rows)
    ]


def status_at(samples, now_s, config=CONFIG):
    return evaluate_samples("t", 0, samples, now_s * S, config).status


def test_offset_lag_is_unknown_without_a_commit_and_clamped_at_zero_by_monitors():
    assert offset_lag(None, 10) is None
    assert offset_lag(-1001, 10) is None  # confluent-kafka's OFFSET_INVALID
    assert offset_lag(5, None) is None
    assert (offset_lag(12, 10), monitored_lag(12, 10)) == (-2, 0)  # as Kafka's tool / Burrow
    assert offset_lag(7, 10) == monitored_lag(7, 10) == 3
    assert monitored_lag(None, 10) is None
    assert total_lag([3, None, 4]) == 7
    assert total_lag([None, None]) is None


def test_a_consumer_that_keeps_up_is_ok():
    # Caught up at some polls, a few records behind at others.
    samples = polls([(100 * i, 100 * i + 5 * (i % 2)) for i in range(1, 9)])
    assert status_at(samples, 75) == Status.OK
    # A constant small lag (no zero in the window) needs allowed_lag, as in Burrow.
    steady = polls([(100 * i, 100 * i + 5) for i in range(1, 9)])
    assert status_at(steady, 75) == Status.WARN
    assert status_at(steady, 75, WindowConfig(intervals=5, allowed_lag=5)) == Status.OK


def test_a_consumer_that_stops_becomes_stop_after_its_window():
    moving = [(100 * i, 100 * i + 20) for i in range(1, 6)]  # commits at 0..40 s
    stuck = [(500, 600 + 100 * i) for i in range(1, 6)]  # then nothing new at 50..90 s
    samples = polls(moving + stuck)
    # The window spans 40 s (0..40); 40 s after the last commit it is not yet "greater".
    assert status_at(samples, 80) != Status.STOP
    assert status_at(samples, 90) == Status.STOP


def test_a_group_reset_to_an_earlier_offset_is_rewind():
    samples = polls([(1000, 1010), (2000, 2050), (3000, 3100), (500, 3200), (700, 3300)])
    assert status_at(samples, 45) == Status.REWIND


def test_a_slow_consumer_whose_lag_grows_is_warn():
    samples = polls([(100, 150), (200, 300), (300, 450), (400, 600), (500, 750)])
    assert status_at(samples, 45) == Status.WARN


def test_commit_timestamps_tell_a_stalled_consumer_from_a_stopped_one():
    # The __consumer_offsets path knows each commit's time: the same offset committed again.
    samples = [Sample(i * 10 * S, 1000, 1100 + 50 * i, commit_timestamp_ms=i * 10 * S)
               for i in range(5)]  # fmt: skip
    assert status_at(samples, 45) == Status.STALL


def test_commits_closer_than_min_distance_replace_the_previous_slot():
    samples = polls([(100, 100), (110, 120), (120, 140)], every_s=0.3)
    window = build_window(samples, 2 * S, WindowConfig(intervals=3, min_distance_ms=1000))
    assert [c.offset if c else None for c in window.slots] == [None, None, 120]


def test_window_keeps_the_last_intervals_commits_and_drops_expired_ones():
    samples = polls([(i, i + 1) for i in range(1, 9)])
    window = build_window(samples, 75 * S, CONFIG)
    assert [c.offset for c in window.slots] == [4, 5, 6, 7, 8]
    assert window.broker_offsets == (5, 6, 7, 8, 9)
    expired = build_window(samples, 75 * S, WindowConfig(intervals=5, expire_ms=25 * S))
    assert [c.offset if c else None for c in expired.slots] == [None, None, 6, 7, 8]


def test_a_partition_without_a_commit_is_unknown_not_ok_or_zero():
    samples = polls([(None, 100), (None, 200)])
    assert build_window(samples, 20 * S, CONFIG).current_lag is None
    assert evaluate_samples("t", 0, samples, 20 * S, CONFIG) is None


def test_window_config_rejects_nonsense():
    with pytest.raises(ValueError, match="intervals must be at least 1"):
        WindowConfig(intervals=0)
    with pytest.raises(ValueError, match="allowed_lag must not be negative"):
        WindowConfig(allowed_lag=-1)


# kafka-lag-exporter's LookupTableSpec: points (offset, time), then lookups.
POINTS = [(100, 30), (200, 60), (200, 120), (200, 700), (300, 730), (300, 9000), (400, 9030)]


@pytest.mark.parametrize(
    ("offset", "expected"),
    [(199, 59.7), (200, 700), (201, 700.3), (250, 715), (299, 729.7), (300, 9000), (301, 9000.3)],
)
def test_time_lookup_interpolates_between_the_newest_surrounding_points(offset, expected):
    table = EndOffsetTable()
    for point in POINTS:
        assert table.add(*point)
    assert table.lookup_time(offset) == pytest.approx(expected)


def test_a_flat_table_extrapolates_to_infinities_and_time_lag_stays_finite():
    table = EndOffsetTable()
    for t in (100, 200, 300, 400):
        table.add(100, t)
    assert [(p.offset, p.timestamp_ms) for p in table.points] == [(100, 100), (100, 400)]
    assert table.lookup_time(99) == -math.inf
    assert table.lookup_time(101) == math.inf
    # Behind a log that did not move: at least the table's age, not infinity.
    assert table.time_lag_s(99, now_ms=10_100) == pytest.approx(10.0)


def test_time_lag_in_seconds_and_its_unknowns():
    table = EndOffsetTable()
    assert table.time_lag_s(5, 1000) is None  # no points
    table.add(0, 0)
    assert table.time_lag_s(0, 5000) == 0.0  # caught up
    assert table.time_lag_s(None, 5000) is None  # no commit
    table.add(1000, 10_000)
    assert table.time_lag_s(500, now_ms=12_000) == pytest.approx(7.0)
    assert table.time_lag_s(1000, now_ms=12_000) == 0.0
    assert not table.add(900, 11_000)  # a falling end offset is rejected
    assert not table.add(1100, 9_000)  # so is an older time
    with pytest.raises(ValueError, match="room for 2 points"):
        EndOffsetTable(capacity=1)


def test_samples_from_table_records_know_whose_timestamp_is_a_commit_time():
    collected = {"group": "g", "topic": "t", "partition": 0, "offset": 5, "logEndOffset": 9,
                 "commitTimestamp": 60_000, "source": "collector"}  # fmt: skip
    assert Sample.from_record(collected) == Sample(60_000, 5, 9, None)
    decoded = {"group": "g", "topic": "t", "partition": 0, "offset": 5, "commitTimestamp": 1234}
    assert Sample.from_record(decoded) == Sample(1234, 5, None, 1234)
