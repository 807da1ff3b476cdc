"""GROUP BY shortcuts that skip work the general path does per row.

* **Sorted key**: grouping on a segment's sorted column over the whole segment (or a doc
  range) puts each group's rows next to each other. Each aggregation then reduces runs
  (``ufunc.reduceat``: one pass, no group id per row, no scatter), which is what a
  sort-based group-by would pay for its sort, already paid at segment build.
* **Rows per dictionary id**: grouping the whole segment on one dictionary column makes the
  group sizes that column's value counts, the same for every query: COUNT reads them from
  the per-segment cache instead of counting 5M group ids again.

Counts, minima and maxima are the general kernels' exactly; float sums can differ in the
last bits, since a run is added up as a block rather than row after row into its group.
``tests/engine/query/test_group_runs.py`` checks every shortcut against DuckDB.
"""

from __future__ import annotations

import numpy as np

from engine.query.aggregation import AggregationFunction, ValueBlock
from engine.query.expressions import Identifier
from engine.query.plan import QueryPlan
from engine.query.projection import Projection
from engine.query.segment_view import SegmentView


def sorted_key_runs(
    plan: QueryPlan, view: SegmentView, doc_ids
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(first row of each group, rows per group, key per group) when the plan groups on one
    sorted dictionary column over all docs or a doc range; rows count from the first
    selected doc. None when the shortcut does not apply."""
    if len(plan.group_by) != 1 or not isinstance(plan.group_by[0], Identifier):
        return None
    column = plan.group_by[0].name
    if not view.has(column) or not view.is_dict_sv(column):
        return None
    sorted_starts = getattr(view.reader(column), "sorted_starts", None)
    starts = sorted_starts() if sorted_starts is not None else None
    if starts is None:
        return None
    if doc_ids is None:
        low, high = 0, view.n
    elif isinstance(doc_ids, slice):
        low, high = doc_ids.start, doc_ids.stop
    else:
        return None
    bounds = np.clip(np.asarray(starts, dtype=np.int64), low, high) - low
    sizes = np.diff(bounds)
    present = np.flatnonzero(sizes)
    return bounds[:-1][present], sizes[present], view.dictionary(column)[present]


def run_states(
    fn: AggregationFunction, projection: Projection, starts: np.ndarray, sizes: np.ndarray
) -> tuple | None:
    """``fn``'s state per run of rows (``starts``/``sizes`` over the projection's rows), or
    None when ``fn`` has no run kernel (the caller then uses group ids)."""
    name = fn.name
    if fn.filter is not None or fn.multi_value or name not in _RUN_KERNELS:
        return None
    if name == "count":
        return (sizes.astype(np.int64),)
    if fn.argument is None or getattr(fn, "time_argument", None) is not None:
        return None
    block, _ = projection.block(fn, None)
    return fn.of_parts(_RUN_KERNELS[name](block, starts, sizes), len(starts))


def _sum(block: ValueBlock, starts: np.ndarray) -> np.ndarray:
    # float64 accumulation, as np.bincount(weights=...) does; the cast happens in reduceat's
    # buffer, so no row-sized float64 copy is made
    return np.add.reduceat(block.values(), starts, dtype=np.float64)


def _extreme(ufunc, block: ValueBlock, starts: np.ndarray) -> np.ndarray:
    if block.dict_ids is not None:  # dictionaries are sorted: the extreme id is the extreme value
        ids = ufunc.reduceat(block.dict_ids, starts)
        return block.dictionary.astype(np.float64)[ids]
    return ufunc.reduceat(block.values(), starts).astype(np.float64)


_RUN_KERNELS = {
    "count": None,
    "sum": lambda block, starts, sizes: (_sum(block, starts),),
    "min": lambda block, starts, sizes: (_extreme(np.minimum, block, starts),),
    "max": lambda block, starts, sizes: (_extreme(np.maximum, block, starts),),
    "avg": lambda block, starts, sizes: (_sum(block, starts), sizes.astype(np.int64)),
    "minmaxrange": lambda block, starts, sizes: (
        _extreme(np.minimum, block, starts),
        _extreme(np.maximum, block, starts),
    ),
}


def dictionary_counts(plan: QueryPlan, view: SegmentView, doc_ids) -> np.ndarray | None:
    """Rows per dictionary id of the plan's one group key when the query reads the whole
    segment, kept per segment across queries; None otherwise."""
    if doc_ids is not None or len(plan.group_by) != 1:
        return None
    key = plan.group_by[0]
    if not isinstance(key, Identifier) or not view.has(key.name):
        return None
    if not view.is_dict_sv(key.name):
        return None
    memo_key = ("dictionary_counts", key.name)
    counts = view.memo(memo_key)
    if counts is None:
        ids = view.dict_ids(key.name)
        counts = np.bincount(ids, minlength=len(view.dictionary(key.name))).astype(np.int64)
        view.remember(memo_key, counts)
    return counts


def counts_state(fn: AggregationFunction, counts: np.ndarray | None) -> tuple | None:
    """COUNT's state from known group sizes (every row counts: no FILTER; the caller knows
    that no NULL is skipped)."""
    if counts is None or fn.name != "count" or fn.filter is not None or fn.multi_value:
        return None
    return (counts.copy(),)
