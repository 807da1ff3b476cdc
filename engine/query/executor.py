"""Run a plan on one segment: prune, filter, then select / aggregate / group."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from pyroaring import BitMap

from engine.common.cancel import checkpoint
from engine.query.decoded_cache import DecodedCache
from engine.query.docset import DocSet
from engine.query.errors import QueryValidationError
from engine.query.expressions import Identifier
from engine.query.filter import FilterEvaluator
from engine.query.group_runs import counts_state, dictionary_counts, run_states, sorted_key_runs
from engine.query.grouping import encode_values
from engine.query.intermediate import IntermediateResult, empty_stats
from engine.query.plan import QueryPlan
from engine.query.projection import Projection, doc_array, value_positions
from engine.query.pruning import prune_reason
from engine.query.segment_view import SegmentView
from engine.query.selection import select_rows
from engine.query.startree import execute_star_tree, reads_segment_nulls, star_tree_for
from engine.query.trace import StageTimer, new_trace


def execute_segment(
    plan: QueryPlan, segment, cache: DecodedCache | None = None, valid: BitMap | None = None
) -> IntermediateResult:
    """The plan's intermediate result for one loaded segment (``ImmutableSegment``); decoded
    columns are kept in ``cache`` across queries when one is given. ``valid``: the docs an
    upsert table's metadata says are current (None: every doc). A traced plan's result
    carries the segment's operator timings (``engine.query.trace``)."""
    if not plan.trace:
        return _execute(plan, segment, cache, None, valid)
    timer = StageTimer()
    result = _execute(plan, segment, cache, timer, valid)
    result.trace = new_trace()
    result.trace["segments"].append({
        "segment": getattr(segment, "name", "?"),
        "timeMs": timer.total_ms(),
        "totalDocs": result.stats["totalDocs"],
        "numDocsScanned": result.stats["numDocsScanned"],
        "numEntriesScannedInFilter": result.stats["numEntriesScannedInFilter"],
        "operators": timer.operators,
    })  # fmt: skip
    return result


class _Filtered(NamedTuple):
    """A filter's answer on one segment: the DocSet, the entries scanned to find it, the
    doc ids as the projection reads them (None: all, a slice: a range, else read-only sorted
    ids) and how many docs match."""

    docs: DocSet
    entries_scanned: int
    doc_ids: np.ndarray | slice | None
    matched: int

    @classmethod
    def of(cls, docs: DocSet, entries_scanned: int) -> _Filtered:
        if docs.kind == "all":
            doc_ids = None
        elif docs.kind == "range":
            doc_ids = slice(docs.start, docs.end)
        else:  # (no docs at all is an empty array, not None: None means every doc)
            doc_ids = docs.ids()
        return cls(docs, entries_scanned, doc_ids, docs.count())


class _Decided(NamedTuple):
    """What a plan decided on one segment, kept per segment and plan shape in the decoded
    cache (``QueryPlan.segment_memo_key``): a repeated query skips pruning, the star-tree
    choice and an index-answered filter, each of which used to be a memo lookup of its own."""

    pruned: str | None  # the reason the segment was pruned
    star: tuple | None  # star_tree_for's answer
    filtered: _Filtered | None  # only a filter that indexes answered alone (nothing scanned)


def _execute(
    plan: QueryPlan,
    segment,
    cache: DecodedCache | None,
    timer: StageTimer | None,
    valid: BitMap | None = None,
) -> IntermediateResult:
    null_handling = plan.null_handling
    view = SegmentView(segment, cache, null_handling)
    stats = empty_stats()
    stats["numSegmentsQueried"] = 1
    stats["totalDocs"] = view.n
    result = IntermediateResult(plan.kind, stats)
    key = plan.segment_memo_key
    kept: _Decided | None = view.memo(key) if key is not None else None
    if kept is not None:
        pruned = kept.pruned
    else:
        pruned = prune_reason(view, plan.filter) if plan.filter is not None else None
    if timer is not None:
        timer.mark("SegmentPruner" if not pruned else f"SegmentPruner ({pruned})")
    if pruned:
        _keep(view, key, kept, _Decided(pruned, None, None))
        return _empty(plan, result)
    if valid is not None and not valid:  # an upsert segment with no current doc
        return _empty(plan, result)
    stats["numSegmentsProcessed"] = 1
    if valid is not None:
        return _execute_valid(plan, view, result, valid, timer)
    if (
        plan.kind == "aggregation"
        and plan.filter is None
        and all(
            fn.name == "count"
            and fn.argument is None
            and fn.filter is None
            and fn.null_input is None
            for fn in plan.aggregations
        )
    ):
        # COUNT(*) over a whole segment: answered from metadata, like Pinot
        stats["numDocsScanned"] = view.n
        stats["numSegmentsMatched"] = 1 if view.n else 0
        result.states = [(np.array([view.n], dtype=np.int64),) for _ in plan.aggregations]
        if timer is not None:
            timer.mark("NonScanBasedAggregationOperator")
        return result
    if plan.kind != "selection" and plan.use_star_tree:
        star = kept.star if kept is not None else star_tree_for(plan, view)
        if star is not None:
            execute_star_tree(plan, view, result, star)
        if timer is not None:
            timer.mark("StarTreeOperator" if star is not None else "StarTreeOperator (not usable)")
        if star is not None:
            _keep(view, key, kept, _Decided(None, star, None))
            return result
    filtered = kept.filtered if kept is not None else None
    if filtered is None:
        filtered = _filter_docs(view, plan, null_handling)
        index_only = filtered.entries_scanned == 0
        _keep(view, key, kept, _Decided(None, None, filtered if index_only else None))
    return _run_filtered(plan, view, result, filtered, timer)


def _execute_valid(plan, view: SegmentView, result, valid: BitMap, timer) -> IntermediateResult:
    """An upsert segment: the filter's docs that are current. No answer from metadata or a
    star-tree, which count every doc."""
    filtered = _filter_docs(view, plan, plan.null_handling)
    if filtered.docs.kind == "all":
        docs = DocSet.all(view.n) if len(valid) == view.n else DocSet.of_bitmap(view.n, valid)
    else:  # roaring's AND: no pass over the segment's docs for a selective filter
        docs = DocSet.of_bitmap(view.n, filtered.docs.as_bitmap() & valid)
    return _run_filtered(plan, view, result, _Filtered.of(docs, filtered.entries_scanned), timer)


def _run_filtered(
    plan, view: SegmentView, result, filtered: _Filtered, timer
) -> IntermediateResult:
    stats = result.stats
    checkpoint()  # a scan-based filter can take most of a segment's time
    docs, doc_ids, matched = filtered.docs, filtered.doc_ids, filtered.matched
    stats["numEntriesScannedInFilter"] = filtered.entries_scanned
    if timer is not None:
        timer.mark(f"FilterOperator ({docs.kind})")
    if matched:
        stats["numSegmentsMatched"] = 1
    if plan.kind == "selection":
        select_rows(plan, view, docs, result)
        if timer is not None:
            timer.mark("SelectionOrderByOperator" if plan.order_by else "SelectionOnlyOperator")
        return result
    stats["numDocsScanned"] = matched
    projection = Projection(view, doc_ids)
    if plan.kind == "aggregation":
        result.states = []
        for fn in plan.aggregations:
            checkpoint()
            fn_projection, _ = _filtered(fn, view, projection, doc_ids, None)
            block, _ = fn_projection.block(fn, None)
            result.states.append(fn.aggregate(block, None, 1))
        if timer is not None:
            timer.mark("AggregationOperator")
    else:
        _group_by(plan, view, doc_ids, projection, result)
        if timer is not None:
            timer.mark("GroupByOperator")
    stats["numEntriesScannedPostFilter"] = matched * len(projection.columns_read)
    return result


def _group_by(plan: QueryPlan, view: SegmentView, doc_ids, projection: Projection, result) -> None:
    """Group the selected rows and aggregate each group into ``result.keys``/``states``."""
    mv_keys = [
        g for g in plan.group_by if isinstance(g, Identifier) and not view.meta(g.name).single_value
    ]
    # with null handling and a NULL among the keys or inputs here: no shortcut (Pinot's
    # group key generators likewise take the general path)
    nulls_here = reads_segment_nulls(plan, view)
    if not (mv_keys or nulls_here) and _group_sorted_runs(plan, view, doc_ids, projection, result):
        return
    if mv_keys:
        # GROUP BY a multi-value column: each doc counts once per value it holds
        doc_ids, projection = _expand_for_mv_group(view, doc_ids, mv_keys)
    groups, keys, key_nulls = projection.group_by(plan.group_by)
    n_groups = len(keys[0]) if keys else 0
    if n_groups > plan.num_groups_limit:
        # Pinot keeps the first numGroupsLimit groups and drops rows of any other group.
        result.num_groups_limit_reached = True
        keep_rows = groups < plan.num_groups_limit
        doc_ids = doc_array(doc_ids, view.n)[keep_rows]
        groups = groups[keep_rows]
        keys = [k[: plan.num_groups_limit] for k in keys]
        key_nulls = [None if m is None else m[: plan.num_groups_limit] for m in key_nulls]
        n_groups = plan.num_groups_limit
        projection = Projection(view, doc_ids)
        projection.columns_read.update(c for e in plan.group_by for c in _columns(e))
    result.keys = keys
    if any(m is not None for m in key_nulls):
        result.key_nulls = key_nulls
    # every dictionary id is a group here: COUNT is the column's cached value counts
    wants_counts = not (mv_keys or nulls_here) and any(
        fn.name == "count" for fn in plan.aggregations
    )
    counts = dictionary_counts(plan, view, doc_ids) if wants_counts else None
    runs = projection.runs if not nulls_here else None
    result.states = []
    for fn in plan.aggregations:
        checkpoint()
        state = counts_state(fn, counts)
        if state is None and runs is not None:
            # each run of rows is one group: reduce the runs, then merge runs into groups
            run_sizes = np.diff(np.append(runs, projection.n))
            per_run = run_states(fn, projection, runs, run_sizes)
            if per_run is not None:
                state = fn.merge(per_run, groups[runs], n_groups)
        if state is None:
            state = _aggregate_rows(fn, view, projection, doc_ids, groups, n_groups)
        result.states.append(state)


def _group_sorted_runs(plan: QueryPlan, view: SegmentView, doc_ids, projection, result) -> bool:
    """Group on a sorted column's runs (``engine.query.group_runs``); False when that does
    not apply and the general path must run."""
    runs = sorted_key_runs(plan, view, doc_ids)
    if runs is None or len(runs[0]) > plan.num_groups_limit:
        return False
    starts, sizes, keys = runs
    projection.columns_read.add(plan.group_by[0].name)
    groups = None
    states = []
    for fn in plan.aggregations:
        state = run_states(fn, projection, starts, sizes) if len(sizes) else None
        if state is None:  # no run kernel: group ids per row, as the general path has them
            if groups is None:
                groups = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
            state = _aggregate_rows(fn, view, projection, doc_ids, groups, len(sizes))
        states.append(state)
    result.keys = [keys]
    result.states = states
    return True


def _aggregate_rows(fn, view, projection, doc_ids, groups, n_groups: int) -> tuple:
    """``fn``'s state from its input rows and their group ids (the general kernel)."""
    fn_projection, fn_groups = _filtered(fn, view, projection, doc_ids, groups)
    block, expanded = fn_projection.block(fn, fn_groups)
    block.every_group = fn_projection is projection  # no row dropped: each group has some
    return fn.aggregate(block, expanded, n_groups)


def _keep(view: SegmentView, key, kept: _Decided | None, decided: _Decided) -> None:
    """Remember ``decided`` under ``key`` unless it came from there (or cannot be kept)."""
    if key is not None and kept is None:
        view.remember(key, decided)


def _filter_docs(view: SegmentView, plan: QueryPlan, null_handling: bool) -> _Filtered:
    """The filter's answer, kept per segment and filter in the decoded cache when indexes
    alone answered it and it has a value (``QueryPlan.filter_memo_key``: no ``NOW()``): a
    repeated query's filter on an immutable segment (or snapshot) matches the same docs, and
    its leaves' resolution, ordering and intersection cost more than the rest of a selective
    query. Plans of other shapes with the same filter share it."""
    where = plan.filter
    if where is None:
        return _Filtered.of(DocSet.all(view.n), 0)  # (an empty segment's: "empty")
    key = plan.filter_memo_key
    found = view.memo(key) if key is not None else None
    if found is not None:
        return found
    evaluator = FilterEvaluator(view, null_handling)
    docs = evaluator.evaluate(where)
    found = _Filtered.of(docs, evaluator.entries_scanned)
    # Only a filter answered from indexes alone (sorted, inverted, range: nothing scanned):
    # keeping a scan's result would be a result cache, which would hide the scan's cost
    # rather than make it cheaper.
    if key is not None and found.entries_scanned == 0:
        for array in (docs.doc_ids, docs.mask, found.doc_ids):
            if isinstance(array, np.ndarray):  # shared by later queries: a write is a bug
                array.setflags(write=False)
        view.remember(key, found)
    return found


def _filtered(fn, view: SegmentView, projection: Projection, doc_ids, groups):
    """The projection (and group ids) of the rows an ``AGG(...) FILTER (WHERE cond)`` sees:
    the query's matching rows that also satisfy ``cond``; with null handling, also only the
    rows where its input is not NULL (``fn.null_input``: Pinot's aggregations skip NULLs)."""
    keep = None  # over the projection's rows
    if fn.filter is not None:
        accepted = FilterEvaluator(view, view.null_handling).evaluate(fn.filter).as_mask()
        keep = accepted[doc_array(doc_ids, view.n)]
    if fn.null_input is not None:
        nulls = projection.nulls_of(fn.null_input)
        if nulls is not None:
            keep = ~nulls if keep is None else keep & ~nulls
    if keep is None:
        return projection, groups
    subset = Projection(view, doc_array(doc_ids, view.n)[keep])
    return subset, None if groups is None else groups[keep]


def _expand_for_mv_group(view: SegmentView, doc_ids, mv_keys):
    if len(mv_keys) > 1:
        raise QueryValidationError("GROUP BY supports at most one multi-value column")
    column = mv_keys[0].name
    offsets, flat_ids, values = view.mv(column)
    docs = doc_array(doc_ids, view.n)
    sizes = offsets[docs + 1] - offsets[docs]
    positions = value_positions(offsets[docs], sizes)
    expanded = np.repeat(docs, sizes)
    projection = Projection(view, expanded)
    projection.columns_read.add(column)
    if flat_ids is not None:
        projection.overrides[mv_keys[0]] = (flat_ids[positions], values)
    else:
        projection.overrides[mv_keys[0]] = encode_values(values[positions])
    return expanded, projection


def _columns(expr) -> set[str]:
    from engine.query.expressions import columns_of

    return columns_of(expr)


def _empty(plan: QueryPlan, result: IntermediateResult) -> IntermediateResult:
    if plan.kind == "group_by":
        result.keys = [np.empty(0) for _ in plan.group_by]
        result.states = [fn.empty_state(0) for fn in plan.aggregations]
    return result
