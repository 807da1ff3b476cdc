"""Cutting Spark's merged output into output segments in the driver, with no sort anywhere.

Spark writes the merged rows as they come, one Parquet file per partition. The driver reads the
files (memory-mapped) and gathers each group's rows: a file holding one group (the common case:
one time bucket of one partition) is taken whole, zero-copy; a file mixing groups is ordered by
group first. A group that fits one segment is its rows as they are. A larger group is cut in
time order without sorting it: the time values at ranks ``max``, ``2 max``, … are found with
``numpy.partition`` (linear), each row's segment is the number of those cut values below its
time, and rows tied with a cut value are numbered in file order so every segment gets exactly
``max`` rows (the last one the rest).

This replaces a ``row_number()`` over a window of the whole group, which sorted every row of
the group in one Spark task on one core and wrote and read the rows a second time.
"""

from __future__ import annotations

from pathlib import Path


def _group_pieces(table, group_columns: tuple[str, ...]) -> list[tuple[tuple, object]]:
    """(group key, rows) of each group of ``table``."""
    import numpy as np

    if table.num_rows == 0:
        return []
    if not group_columns:
        return [((), table)]
    values = [table.column(c).to_numpy() for c in group_columns]
    if all(v.min() == v.max() for v in values):
        return [(tuple(int(v[0]) for v in values), table)]
    order = np.lexsort(values[::-1])
    table = table.take(order)
    values = [v[order] for v in values]
    change = np.zeros(table.num_rows - 1, dtype=bool)
    for column in values:
        change |= column[1:] != column[:-1]
    starts = [0, *(np.flatnonzero(change) + 1).tolist()]
    stops = [*starts[1:], table.num_rows]
    return [(tuple(int(v[s]) for v in values), table.slice(s, e - s))
            for s, e in zip(starts, stops, strict=True)]  # fmt: skip


def _time_keys(times):
    """``times`` as a numpy array ordered as Spark orders the time column (nulls first)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    times = times.combine_chunks() if isinstance(times, pa.ChunkedArray) else times
    if times.null_count or not (pa.types.is_integer(times.type) or pa.types.is_timestamp(
            times.type) or pa.types.is_floating(times.type)):  # fmt: skip
        # strings (SIMPLE_DATE_FORMAT) or nulls: dense ranks (from 1) keep the ascending
        # order, and nulls (rank 0) come first
        ranks = pc.rank(times, sort_keys="ascending", tiebreaker="dense")
        times = pc.if_else(pc.is_valid(times), ranks, pa.scalar(0, ranks.type))
    return times.to_numpy(zero_copy_only=False)


def segment_of_rows(keys, max_records: int):
    """Each row's output segment: rows in time order (``keys``) cut every ``max_records``;
    rows with equal times are taken in their order in ``keys``."""
    import numpy as np

    ranks = list(range(max_records, len(keys), max_records))
    if not ranks:
        return np.zeros(len(keys), dtype=np.int64)
    cut_values = np.partition(keys, ranks)[ranks]
    segment = np.searchsorted(cut_values, keys, "left")  # cut values below the row's time
    for value in np.unique(cut_values):
        tied = np.flatnonzero(keys == value)
        below = np.count_nonzero(keys < value)
        segment[tied] = (below + np.arange(len(tied))) // max_records
    return segment


def cut_group(pieces: list, time_column: str | None, max_records: int) -> list:
    """One group's output tables from its ``pieces``: at most ``max_records`` rows each, in
    time order across segments."""
    import numpy as np
    import pyarrow as pa

    whole = pa.concat_tables(pieces)
    if whole.num_rows <= max_records:
        return [whole]
    if not time_column:  # no order to keep: cut in file order
        return [whole.slice(s, max_records) for s in range(0, whole.num_rows, max_records)]
    segment = segment_of_rows(_time_keys(whole.column(time_column)), max_records)
    return [whole.take(np.flatnonzero(segment == s)) for s in range(int(segment.max()) + 1)]


def cut_output(files: list[Path], group_columns: tuple[str, ...], time_column: str | None,
               max_records: int, columns: list[str], schema) -> list:  # fmt: skip
    """The output segments' tables from Spark's output ``files``, ordered by group then
    time, without the group columns and cast to ``schema``."""
    import pyarrow.parquet as pq

    by_group: dict[tuple, list] = {}
    for path in files:
        for key, piece in _group_pieces(pq.read_table(path, memory_map=True), group_columns):
            by_group.setdefault(key, []).append(piece)
    out = []
    for key in sorted(by_group):
        for piece in cut_group(by_group[key], time_column, max_records):
            if piece.num_rows:
                out.append(piece.select(columns).cast(schema))
    return out
