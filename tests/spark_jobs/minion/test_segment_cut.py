"""The driver-side cut of Spark's sorted output into segments, against the reference it
replaces: all of a group's rows sorted by time and cut every ``max`` rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.minion.segment_cut import cut_output, cut_sorted, group_counts


def sorted_slices(times: list, sizes: list[int], time_type=None) -> list[pa.Table]:
    """``times`` dealt into slices of ``sizes``, each sorted (as Spark sorts its partitions);
    ``i`` numbers the rows so each one can be followed."""
    slices, at = [], 0
    for size in sizes:
        part = sorted((t, at + k) for k, t in enumerate(times[at : at + size]))
        slices.append(pa.table({"t": pa.array([t for t, _ in part], time_type or pa.int64()),
                                "i": pa.array([i for _, i in part], pa.int64())}))  # fmt: skip
        at += size
    return slices


@pytest.mark.parametrize("seed", range(6))
def test_cut_matches_a_global_sort_with_ties_across_slices(seed):
    rng = random.Random(seed)
    times = [rng.randrange(8) for _ in range(rng.randrange(40, 90))]  # many ties
    sizes, left = [], len(times)
    while left:
        sizes.append(min(left, rng.randrange(1, 30)))
        left -= sizes[-1]
    out = cut_sorted(sorted_slices(times, sizes), "t", 10)
    assert [t.num_rows for t in out] == [10] * (len(times) // 10) + (
        [len(times) % 10] if len(times) % 10 else [])  # fmt: skip
    assert sorted(i for t in out for i in t.column("i").to_pylist()) == list(range(len(times)))
    expected = sorted(times)
    for k, piece in enumerate(out):  # each segment holds the k-th 10 smallest times
        assert sorted(piece.column("t").to_pylist()) == expected[k * 10 : (k + 1) * 10]


def test_more_equal_times_than_one_segment_are_spread_over_several():
    out = cut_sorted(sorted_slices([5] * 25 + [1, 9], [13, 14]), "t", 10)
    assert [sorted(t.column("t").to_pylist()) for t in out] == [
        [1] + [5] * 9, [5] * 10, [5] * 6 + [9]]  # fmt: skip


def test_string_times_and_no_time_column():
    days = ["2024-01-03", "2024-01-01", "2024-01-02", "2024-01-01", "2024-01-04"]
    out = cut_sorted(sorted_slices(days, [3, 2], pa.string()), "t", 2)
    assert [t.column("t").to_pylist() for t in out] == [
        ["2024-01-01", "2024-01-01"], ["2024-01-02", "2024-01-03"], ["2024-01-04"]]  # fmt: skip
    assert [t.num_rows for t in cut_sorted(sorted_slices([3, 1, 2], [3]), None, 2)] == [2, 1]


def test_files_are_cut_per_group_in_group_order(tmp_path):
    # two Spark output files sorted by (group, time); group 1 spans both and is cut
    files = []
    for n, rows in enumerate([[(0, 5), (1, 1), (1, 4)], [(1, 2), (1, 3), (2, 9)]]):
        path = tmp_path / f"part-{n}.parquet"
        pq.write_table(pa.table({"g": pa.array([g for g, _ in rows], pa.int64()),
                                 "t": pa.array([t for _, t in rows], pa.int64())}), path)  # fmt: skip
        files.append(path)
    schema = pa.schema([("t", pa.int32())])
    out = cut_output(files, ("g",), "t", 2, ["t"], schema)
    # a segment is its slices of each file in file order, each slice in time order
    assert [sorted(t.column("t").to_pylist()) for t in out] == [[5], [1, 2], [3, 4], [9]]
    assert all(t.schema == schema for t in out)
    tables = [pa.table({"g": pa.array([0, 1, 1], pa.int64())}), pa.table({"g": [1, 2]})]
    assert sorted(group_counts(tables, ("g",))) == [1, 1, 3]
    assert group_counts(tables, ()) == [5]
