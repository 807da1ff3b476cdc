"""MergeRollupTask's transforms on a real (session-wide, local) SparkSession, checked against
the same merge done in plain Python: concat keeps every row, rollup keeps SUM per group and
yields one row per group, dedup drops exact duplicates, time rounding and erased dimensions
make rollup group more, and the output is split at maxNumRecordsPerSegment."""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa
import pytest

from spark_jobs.minion.merge_rollup import MergeSpec, MergeSpecError, merge_tables

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000


def segment(rows: list[tuple]) -> pa.Table:
    """(day, carrier, origin, delay, flights) rows; `day` is DaysSinceEpoch (an INT)."""
    day, carrier, origin, delay, flights = zip(*rows, strict=True)
    return pa.table({
        "day": pa.array(day, pa.int32()), "carrier": pa.array(carrier, pa.string()),
        "origin": pa.array(origin, pa.string()), "delay": pa.array(delay, pa.int32()),
        "flights": pa.array(flights, pa.int64()),
    })  # fmt: skip


INPUTS = [
    segment([(16071, "AA", "SFO", 5, 1), (16071, "AA", "SFO", 7, 1), (16072, "DL", "JFK", 1, 2)]),
    segment([(16071, "AA", "SFO", 5, 1), (16072, "DL", "LAX", 3, 1), (16073, "AA", "SFO", 0, 4)]),
]
ALL_ROWS = [row for table in INPUTS for row in zip(*table.to_pydict().values(), strict=True)]


def rows_of(tables: list[pa.Table]) -> list[tuple]:
    return sorted(row for t in tables for row in zip(*t.to_pydict().values(), strict=True))


def spec(**kwargs) -> MergeSpec:
    base = {"time_column": "day", "time_unit_ms": DAY_MS, "dimensions": ("day", "carrier", "origin"),
            "metrics": {"delay": "sum", "flights": "sum"}}  # fmt: skip
    return MergeSpec(**{**base, **kwargs})


def test_concat_keeps_every_row(spark, tmp_path):
    out = merge_tables(spark, INPUTS, spec(merge_type="concat"), tmp_path)
    assert rows_of(out) == sorted(ALL_ROWS)
    assert out[0].schema == INPUTS[0].schema


def test_rollup_keeps_sum_per_group_with_one_row_each(spark, tmp_path):
    out = merge_tables(spark, INPUTS, spec(merge_type="rollup",
                                           metrics={"delay": "sum", "flights": "max"}), tmp_path)  # fmt: skip
    expected_sum, expected_max = defaultdict(int), defaultdict(int)
    for day, carrier, origin, delay, flights in ALL_ROWS:
        expected_sum[(day, carrier, origin)] += delay
        expected_max[(day, carrier, origin)] = max(expected_max[(day, carrier, origin)], flights)
    got = rows_of(out)
    assert len(got) == len(expected_sum)  # one row per group
    assert {(d, c, o): s for d, c, o, s, _ in got} == dict(expected_sum)
    assert {(d, c, o): m for d, c, o, _, m in got} == dict(expected_max)
    assert out[0].schema == INPUTS[0].schema  # sums are cast back to the metric's own type


def test_dedup_drops_exact_duplicates(spark, tmp_path):
    out = merge_tables(spark, INPUTS, spec(merge_type="dedup"), tmp_path)
    assert rows_of(out) == sorted(set(ALL_ROWS))
    assert Counter(ALL_ROWS)[(16071, "AA", "SFO", 5, 1)] == 2


def test_rounding_and_erased_dimensions_group_more(spark, tmp_path):
    rounded = spec(merge_type="rollup", round_bucket_ms=2 * DAY_MS,
                   erase_dimensions={"origin": "null"})  # fmt: skip
    got = rows_of(merge_tables(spark, INPUTS, rounded, tmp_path))
    # days 16071..16073 floor to even days 16070 and 16072; origin is erased
    assert got == [(16070, "AA", "null", 17, 3), (16072, "AA", "null", 0, 4),
                   (16072, "DL", "null", 4, 3)]  # fmt: skip


def test_output_is_split_at_max_records_per_segment(spark, tmp_path):
    out = merge_tables(spark, INPUTS, spec(max_records_per_segment=4), tmp_path)
    assert [t.num_rows for t in out] == [4, 2]
    assert rows_of(out) == sorted(ALL_ROWS)
    # ordered by time: the first segment holds the earliest rows
    assert max(out[0].column("day").to_pylist()) <= min(out[1].column("day").to_pylist())


def test_bad_specs_name_the_key():
    with pytest.raises(MergeSpecError, match="'mergeType'"):
        spec(merge_type="merge")
    with pytest.raises(MergeSpecError, match=r"'delay\.aggregationType'"):
        spec(metrics={"delay": "avg"})
    with pytest.raises(MergeSpecError, match="'roundBucketTimePeriod'"):
        MergeSpec(round_bucket_ms=DAY_MS)
