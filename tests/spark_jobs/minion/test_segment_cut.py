"""The driver-side cut of Spark's output into segments, against the reference it replaces:
all of a group's rows sorted by time and cut every ``max`` rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.minion.segment_cut import cut_group, cut_output


def pieces_of(times: list, sizes: list[int], time_type=None) -> list[pa.Table]:
    """``times`` dealt into pieces of ``sizes``; ``i`` numbers the rows so each can be
    followed."""
    pieces, at = [], 0
    for size in sizes:
        pieces.append(pa.table({"t": pa.array(times[at:at + size], time_type or pa.int64()),
                                "i": pa.array(range(at, at + size), pa.int64())}))  # fmt: skip
        at += size
    return pieces


@pytest.mark.parametrize("seed", range(6))
def test_cut_matches_a_global_sort_with_ties_across_pieces(seed):
    rng = random.Random(seed)
    times = [rng.randrange(8) for _ in range(rng.randrange(40, 90))]  # many ties
    sizes, left = [], len(times)
    while left:
        sizes.append(min(left, rng.randrange(1, 30)))
        left -= sizes[-1]
    out = cut_group(pieces_of(times, sizes), "t", 10)
    assert [t.num_rows for t in out] == [10] * (len(times) // 10) + (
        [len(times) % 10] if len(times) % 10 else [])  # fmt: skip
    assert sorted(i for t in out for i in t.column("i").to_pylist()) == list(range(len(times)))
    expected = sorted(times)
    for k, piece in enumerate(out):  # each segment holds the k-th 10 smallest times
        assert sorted(piece.column("t").to_pylist()) == expected[k * 10 : (k + 1) * 10]


def test_more_equal_times_than_one_segment_are_spread_over_several():
    out = cut_group(pieces_of([5] * 13 + [9, 1] + [5] * 12, [13, 14]), "t", 10)
    assert [sorted(t.column("t").to_pylist()) for t in out] == [
        [1] + [5] * 9, [5] * 10, [5] * 6 + [9]]  # fmt: skip


def test_string_and_null_times_and_no_time_column():
    days = ["2024-01-03", "2024-01-01", None, "2024-01-02", "2024-01-01", "2024-01-04"]
    out = cut_group(pieces_of(days, [3, 3], pa.string()), "t", 2)
    assert [sorted(t.column("t").to_pylist(), key=str) for t in out] == [
        ["2024-01-01", None], ["2024-01-01", "2024-01-02"], ["2024-01-03", "2024-01-04"]]  # fmt: skip
    assert [t.num_rows for t in cut_group(pieces_of([3, 1, 2], [3]), None, 2)] == [2, 1]


def test_files_are_cut_per_group_in_group_order(tmp_path):
    # Spark's output files in no order; group 1 spans both files and is cut in time order
    files = []
    for n, rows in enumerate([[(1, 4), (0, 5), (1, 1)], [(2, 9), (1, 3), (1, 2)]]):
        path = tmp_path / f"part-{n}.parquet"
        pq.write_table(pa.table({"g": pa.array([g for g, _ in rows], pa.int64()),
                                 "t": pa.array([t for _, t in rows], pa.int64())}), path)  # fmt: skip
        files.append(path)
    schema = pa.schema([("t", pa.int32())])
    out = cut_output(files, ("g",), "t", 2, ["t"], schema)
    assert [sorted(t.column("t").to_pylist()) for t in out] == [[5], [1, 2], [3, 4], [9]]
    assert all(t.schema == schema for t in out)
