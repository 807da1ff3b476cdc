"""Cutting Spark's merged output into output segments in the driver, without a global sort.

Spark writes the merged rows sorted within each of its partitions (by the group columns, then
by the time column when some group may exceed ``maxNumRecordsPerSegment``), one Parquet file
per partition. Each file is then a run of contiguous slices, one per group, each in time
order. A group that fits one segment is the concatenation of its slices. A larger group is
cut in global time order by finding, for each cut ``k * max``, the time value at that rank
(``numpy.partition``, linear) and the position in each sorted slice where the cut falls
(a binary search; rows tied with the cut value are taken file by file until the count is
exact). No row is copied: every output segment is zero-copy slices of the files read.

This replaces a ``row_number()`` over a window of the whole group, which sorted every row of
the group in one Spark task on one core and wrote and read the rows a second time.
"""

from __future__ import annotations

import itertools
from pathlib import Path


def group_counts(tables: list, group_columns: tuple[str, ...]) -> list[int]:
    """The number of input rows of each group (one count when there are no groups)."""
    import pyarrow as pa

    if not group_columns:
        return [sum(t.num_rows for t in tables)]
    keys = pa.concat_tables([t.select(list(group_columns)) for t in tables])
    counted = keys.group_by(list(group_columns)).aggregate([([], "count_all")])
    return counted.column("count_all").to_pylist()


def _runs(table, group_columns: tuple[str, ...]) -> list[tuple[tuple, int, int]]:
    """(group key, start, stop) of each run of equal group values in ``table``, which is
    sorted by the group columns."""
    import numpy as np

    n = table.num_rows
    if n == 0:
        return []
    if not group_columns:
        return [((), 0, n)]
    values = [table.column(c).to_numpy() for c in group_columns]
    change = np.zeros(n - 1, dtype=bool)
    for column in values:
        change |= column[1:] != column[:-1]
    starts = [0, *(np.flatnonzero(change) + 1).tolist()]
    stops = [*starts[1:], n]
    return [(tuple(int(v[s]) for v in values), s, e) for s, e in zip(starts, stops, strict=True)]


def _sort_keys(slices: list, time_column: str):
    """Per slice, a numpy array ordered as Spark sorted the time column (nulls first)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    times = pa.chunked_array([s.column(time_column) for s in slices]).combine_chunks()
    if times.null_count or not (pa.types.is_integer(times.type) or pa.types.is_timestamp(
            times.type) or pa.types.is_floating(times.type)):  # fmt: skip
        # strings (SIMPLE_DATE_FORMAT) or nulls: dense ranks (from 1) keep Spark's ascending
        # order, and nulls (rank 0) come first as Spark sorts them
        ranks = pc.rank(times, sort_keys="ascending", tiebreaker="dense")
        times = pc.if_else(pc.is_valid(times), ranks, pa.scalar(0, ranks.type))
    flat = times.to_numpy(zero_copy_only=False)
    offsets = np.cumsum([0, *(s.num_rows for s in slices)])
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(slices))], flat


def cut_sorted(slices: list, time_column: str | None, max_records: int) -> list:
    """One group's output tables from its ``slices`` (each sorted by ``time_column``): at most
    ``max_records`` rows each, in time order."""
    import numpy as np
    import pyarrow as pa

    total = sum(s.num_rows for s in slices)
    if total <= max_records:
        return [pa.concat_tables(slices)]
    ranks = [max_records * k for k in range(1, -(-total // max_records))]
    if not time_column:  # no order to keep: cut in file order
        whole = pa.concat_tables(slices)
        return [whole.slice(start, max_records) for start in [0, *ranks]]
    keys, flat = _sort_keys(slices, time_column)
    values = np.partition(flat, ranks)[ranks]
    cuts = [[0] * len(slices)]
    for rank, value in zip(ranks, values, strict=True):
        low = [int(np.searchsorted(k, value, "left")) for k in keys]
        high = [int(np.searchsorted(k, value, "right")) for k in keys]
        need, cut = rank - sum(low), []
        for lo, hi in zip(low, high, strict=True):  # ties to the cut's side, file by file
            take = min(need, hi - lo)
            cut.append(lo + take)
            need -= take
        cuts.append(cut)
    cuts.append([s.num_rows for s in slices])
    return [
        pa.concat_tables([s.slice(a[i], b[i] - a[i]) for i, s in enumerate(slices)])
        for a, b in itertools.pairwise(cuts)
    ]


def cut_output(files: list[Path], group_columns: tuple[str, ...], time_column: str | None,
               max_records: int, columns: list[str], schema) -> list:  # fmt: skip
    """The output segments' tables from Spark's sorted output ``files``, ordered by group
    then time, without the group columns and cast to ``schema``."""
    import pyarrow.parquet as pq

    by_group: dict[tuple, list] = {}
    for path in files:
        table = pq.read_table(path, memory_map=True)
        for key, start, stop in _runs(table, group_columns):
            by_group.setdefault(key, []).append(table.slice(start, stop - start))
    out = []
    for key in sorted(by_group):
        for piece in cut_sorted(by_group[key], time_column, max_records):
            if piece.num_rows:
                out.append(piece.select(columns).cast(schema))
    return out
