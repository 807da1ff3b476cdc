"""Consumed rows through a partition's metadata (Pinot's ``addRecord``), one batch at a time.

For each row, in stream order: a key not in the map is new; a row whose comparison value is
at least the stored one replaces it (a tie: the later row wins); a smaller one is out of order,
indexed as an invalid doc (its ``outOfOrderRecordColumn`` set to true) or, with
``dropOutOfOrderRecord``, not indexed. Partial upserts merge the row with the key's previous
one first. Dedup keeps a key's first row and drops the rest (``metadataTTL`` lets a key come
back once its stored time is that far behind the newest time seen).

A whole batch is decided, indexed into the consuming segment and applied to the bitmaps under
the partition's lock, which queries take to read the partition: the batch appears at once.
A FULL upsert on one comparison column is decided with array operations; partial upserts,
several comparison columns and dedup with a TTL go row by row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from engine.ingest.coercion import NULL_COLUMN_PREFIX
from engine.upsert.comparison import MULTI_NULL_ERROR, delete_flags, incoming_wins, merged_tuple
from engine.upsert.entries import doc_of, segment_of
from engine.upsert.keys import Keys
from engine.upsert.partition import PartitionMetadata
from engine.upsert.rows import SegmentRows
from engine.upsert.validity import TrackedSegment


@dataclasses.dataclass
class BatchOutcome:
    indexed: int
    errors: dict[int, str]  # row position in the prepared table -> why it was skipped
    dropped: int  # out-of-order rows (dropOutOfOrderRecord) or dedup duplicates


def index_batch(part: PartitionMetadata, tracked: TrackedSegment, table: pa.Table,
                append: Callable[[pa.Table, dict], int]) -> BatchOutcome:  # fmt: skip
    """Decide ``table``'s rows, ``append`` the ones to index into the consuming segment with
    the rows skipped as errors (it returns the first doc id), and update the metadata; all
    under the partition lock."""
    ctx = part.context
    with part.lock:
        errors = _bad_rows(part, table)
        rows = np.flatnonzero(~np.isin(np.arange(table.num_rows), list(errors)))
        if errors:
            table = table.take(pa.array(rows))
        keys = ctx.keys.read(table)
        if ctx.comparison is not None:
            cmp, _ = ctx.comparison.read(table)
        else:  # dedup without a time column: every row the same time
            cmp = np.zeros(table.num_rows)
        if ctx.is_dedup:
            keep, winners = _decide_dedup(part, keys, cmp)
            decided = _Decided(keep, winners, None)
        elif ctx.sequential:
            decided = _decide_sequential(part, keys, cmp, table)
            table = decided.table if decided.table is not None else table
        else:
            decided = _decide_full(part, keys, cmp)
        if (ctx.ttl > 0 or ctx.deleted_ttl > 0) and len(cmp):
            part.watermark = max(part.watermark, float(np.max(cmp)))
        table, keep = _out_of_order(ctx, table, decided.keep)
        first = append(table, errors)
        docs = first + np.cumsum(keep) - 1  # the doc id of each kept row
        _apply(
            part, tracked, keys, _winner_values(cmp, decided), docs, decided.winners, table, keep
        )
        dropped = int((~keep).sum())
        part.counters["errorRows"] += len(errors)
        part.counters["dedupDropped" if ctx.is_dedup else "outOfOrder"] += (
            dropped if ctx.is_dedup else int((~decided.keep).sum())
        )
        return BatchOutcome(table.num_rows, errors, dropped)


@dataclasses.dataclass
class _Decided:
    keep: np.ndarray  # True: in order (upsert) / first of its key (dedup)
    winners: tuple[np.ndarray, np.ndarray]  # (rows that end up current, their slots or -1)
    table: pa.Table | None  # partial upsert: the merged rows
    values: dict | None = None  # several comparison columns: row -> its merged tuple


def _bad_rows(part: PartitionMetadata, table: pa.Table) -> dict[int, str]:
    ctx = part.context
    errors = {}
    for row in np.flatnonzero(ctx.keys.missing(table)):
        errors[int(row)] = f"no value for primary key column(s) {ctx.keys.columns}"
    if ctx.comparison is not None and not ctx.is_dedup:
        _, bad = ctx.comparison.read(table)
        why = (f"no value for comparison column {ctx.comparison.columns[0]!r}"
               if ctx.comparison.single else MULTI_NULL_ERROR)  # fmt: skip
        for row in np.flatnonzero(bad):
            errors.setdefault(int(row), why)
    return errors


def _decide_full(part: PartitionMetadata, keys: Keys, cmp: np.ndarray) -> _Decided:
    """Per row whether it is in order (at least every earlier value of its key, stored one
    included), and per key the last in-order row: a segmented running maximum over the batch
    sorted by (key, position), on dense ranks of the values."""
    n = len(keys)
    if not n:
        return _Decided(np.zeros(0, bool), (np.zeros(0, np.int64), np.zeros(0, np.int64)), None)
    group, first = keys.group()
    slots = part.index.lookup(keys.take(first))
    has = slots >= 0
    stored = part.entries.cmp[slots[has]]
    _, inverse = np.unique(np.concatenate([stored, cmp]), return_inverse=True)
    inverse = inverse.reshape(-1)
    stored_rank = np.full(len(first), -1, dtype=np.int64)
    stored_rank[has] = inverse[: len(stored)]
    rank = inverse[len(stored) :]
    order = np.lexsort((np.arange(n), group))
    g, v = group[order], rank[order]
    width = int(inverse.max()) + 2
    encoded = g * width + v + 1
    running = np.maximum.accumulate(encoded)
    before = np.empty(n, dtype=np.int64)
    before[0] = g[0] * width
    same = g[1:] == g[:-1]
    before[1:] = np.where(same, running[:-1], g[1:] * width)
    previous = np.maximum(before - g * width - 1, stored_rank[g])
    in_order = v >= previous
    keep = np.empty(n, dtype=bool)
    keep[order] = in_order
    ordered = np.flatnonzero(in_order)
    winners = ordered[np.r_[g[ordered][1:] != g[ordered][:-1], True]] if len(ordered) else ordered
    return _Decided(keep, (order[winners], slots[g[winners]]), None)


def _decide_dedup(part: PartitionMetadata, keys: Keys, times: np.ndarray):
    ttl = part.context.ttl
    slots = part.index.lookup(keys)
    if ttl <= 0:
        _group, first = keys.group()
        keep = np.zeros(len(keys), dtype=bool)
        keep[first[slots[first] < 0]] = True
        return keep, (np.flatnonzero(keep), np.full(int(keep.sum()), -1, np.int64))
    watermark = max(part.watermark, 0.0)
    seen: dict = {}
    keep = np.zeros(len(keys), dtype=bool)
    winners: dict = {}
    for row in range(len(keys)):
        key = _hashable(keys, row)
        watermark = max(watermark, float(times[row]))
        slot = int(slots[row])
        stored = seen.get(key)
        if stored is None and slot >= 0:
            stored = float(part.entries.cmp[slot])
        if stored is not None and stored >= watermark - ttl:
            continue
        keep[row] = True
        seen[key] = float(times[row])
        winners[key] = (row, slot)
    part.watermark = watermark
    rows = np.array([w[0] for w in winners.values()], dtype=np.int64)
    return keep, (rows, np.array([w[1] for w in winners.values()], dtype=np.int64))


def _decide_sequential(part: PartitionMetadata, keys: Keys, cmp: np.ndarray,
                       table: pa.Table) -> _Decided:  # fmt: skip
    ctx = part.context
    entries = part.entries
    slots = part.index.lookup(keys)
    deleted = delete_flags(table, ctx.delete_column, ctx.delete_type)
    merger = ctx.merger
    rows = _row_dicts(table) if merger is not None else None
    readers: dict[int, SegmentRows] = {}
    state: dict = {}  # key -> [slot, row in batch or -1, location, cmp, deleted]
    keep = np.zeros(len(keys), dtype=bool)
    for row in range(len(keys)):
        key = _hashable(keys, row)
        current = state.get(key)
        slot = int(slots[row])
        if current is None and slot >= 0:
            current = [
                slot,
                -1,
                int(entries.location[slot]),
                entries.cmp[slot],
                bool(entries.deleted[slot]),
            ]
        value = cmp[row]
        wins = current is None or incoming_wins(value, current[3])
        if not wins:
            continue
        keep[row] = True
        if merger is not None and current is not None and not deleted[row] and not current[4]:
            rows[row] = merger.merge(_previous(part, readers, rows, current), rows[row])
        if isinstance(value, tuple) and current is not None:
            value = merged_tuple(value, current[3])
        state[key] = [-1 if current is None else current[0], row, -1, value, bool(deleted[row])]
    merged = _rows_table(rows, table) if merger is not None else None
    winners = np.array([s[1] for s in state.values()], dtype=np.int64)
    winner_slots = np.array([s[0] for s in state.values()], dtype=np.int64)
    values = {s[1]: s[3] for s in state.values()} if not ctx.comparison.single else None
    return _Decided(keep, (winners, winner_slots), merged, values)


def _previous(part, readers, rows, current) -> tuple[dict, set]:
    if current[1] >= 0:  # an earlier row of this batch
        return rows[current[1]]
    location = np.int64(current[2])
    sid, doc = int(segment_of(location)), int(doc_of(location))
    reader = readers.get(sid)
    if reader is None:
        tracked = part.segments[sid]
        segment = tracked.segment.snapshot() if tracked.mutable else tracked.segment
        reader = readers[sid] = SegmentRows(segment)
    return reader.row(doc, [f.name for f in part.context.schema.fields])


def _row_dicts(table: pa.Table) -> list[tuple[dict, set]]:
    out = []
    for record in table.to_pylist():
        nulls = {k[len(NULL_COLUMN_PREFIX):] for k, v in record.items()
                 if k.startswith(NULL_COLUMN_PREFIX) and v}  # fmt: skip
        out.append(
            ({k: v for k, v in record.items() if not k.startswith(NULL_COLUMN_PREFIX)}, nulls)
        )
    return out


def _rows_table(rows: list[tuple[dict, set]], like: pa.Table) -> pa.Table:
    records = []
    for values, nulls in rows:
        record = dict(values)
        for name in like.column_names:
            if name.startswith(NULL_COLUMN_PREFIX):
                record[name] = name[len(NULL_COLUMN_PREFIX) :] in nulls
        records.append(record)
    return pa.Table.from_pylist(records, schema=like.schema)


def _hashable(keys: Keys, row: int):
    main = keys.main[row]
    return main if keys.low is None else (int(main), int(keys.low[row]))


def _out_of_order(ctx, table: pa.Table, in_order: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """Mark (``outOfOrderRecordColumn``) or drop (``dropOutOfOrderRecord``; dedup duplicates)
    out-of-order rows; returns the table to index and which rows of it are kept."""
    if ctx.is_dedup or ctx.drop_out_of_order:
        if not in_order.all():
            table = table.filter(pa.array(in_order))
        return table, in_order
    column = ctx.out_of_order_column
    if column:
        at = table.column_names.index(column)
        flags = pa.array((~in_order).astype(np.int32), type=table.schema.field(column).type)
        table = table.set_column(at, table.schema.field(column), flags)
        null = NULL_COLUMN_PREFIX + column
        if null in table.column_names:
            at = table.column_names.index(null)
            table = table.set_column(at, null, pa.array(np.zeros(table.num_rows, dtype=bool)))
    return table, np.ones(len(in_order), dtype=bool)


def _winner_values(cmp: np.ndarray, decided: _Decided) -> np.ndarray:
    if decided.values is None:
        return cmp
    out = cmp.copy()
    for row, value in decided.values.items():
        out[row] = value
    return out


def _apply(part, tracked, keys: Keys, cmp, docs, winners, table, keep) -> None:
    rows, slots = winners
    if not len(rows):
        return
    ctx = part.context
    deleted = np.zeros(len(keep), dtype=bool)
    if ctx.delete_column:
        deleted[keep] = delete_flags(table, ctx.delete_column, ctx.delete_type)
    stored = slots >= 0
    up = rows[stored]
    part._update(tracked, slots[stored], cmp[up], docs[up], deleted[up])
    new = rows[~stored]
    part._insert(tracked, keys.take(new), cmp[new], docs[new], deleted[new])
