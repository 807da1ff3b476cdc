"""Aggregations whose state is a per-group value histogram (value -> count): exact
DISTINCTCOUNT, exact PERCENTILE and MODE. The histogram is mergeable without loss and much
smaller than the raw values when a column repeats values."""

from __future__ import annotations

import numpy as np

from engine.query.aggregation.base import (
    AggregationFunction,
    Histogram,
    concat_histograms,
    histogram_from_arrow,
    histogram_from_block,
    histogram_to_arrow,
    merge_histograms,
    take_histogram,
)


class _HistogramAggregation(AggregationFunction):
    state_fields = ("values", "counts")

    def aggregate(self, block, groups, n_groups):
        return (histogram_from_block(block, groups, n_groups),)

    def merge(self, state, groups, n_groups):
        return (merge_histograms(state[0], groups, n_groups),)

    def to_arrow(self, state):
        return histogram_to_arrow(state[0])

    def from_arrow(self, columns):
        return (histogram_from_arrow(columns),)

    def take(self, state, index):
        return (take_histogram(state[0], index),)

    def concat_states(self, states):
        return (concat_histograms([s[0] for s in states]),)


class DistinctCount(_HistogramAggregation):
    name = "distinctcount"
    result_type = "INT"

    def finalize(self, state):
        return state[0].group_sizes().astype(np.int32)


class Percentile(_HistogramAggregation):
    """Exact percentile as Pinot computes it: sort the n values and take the one at index
    ``floor(n * p / 100)`` (clamped to n - 1); -Infinity when there are no values."""

    name = "percentile"

    def finalize(self, state):
        hist: Histogram = state[0]
        p = float(self.params[0])
        out = np.full(len(hist.offsets) - 1, -np.inf)
        cumulative = np.cumsum(hist.counts)
        for g in range(len(out)):
            lo, hi = hist.offsets[g], hist.offsets[g + 1]
            if lo == hi:
                continue
            base = cumulative[lo - 1] if lo > 0 else 0.0
            total = cumulative[hi - 1] - base
            index = min(int(total * p / 100.0), int(total) - 1)
            pos = np.searchsorted(cumulative[lo:hi] - base, index, side="right")
            out[g] = float(hist.values[lo + pos])
        return out


class Mode(_HistogramAggregation):
    """Most frequent value; ties go to the smallest value (Pinot's default MIN reducer)."""

    name = "mode"

    def finalize(self, state):
        hist: Histogram = state[0]
        out = np.full(len(hist.offsets) - 1, -np.inf)
        for g in range(len(out)):
            lo, hi = hist.offsets[g], hist.offsets[g + 1]
            if lo < hi:
                out[g] = float(hist.values[lo + int(np.argmax(hist.counts[lo:hi]))])
        return out


class SegmentPartitionedDistinctCount(AggregationFunction):
    """SEGMENTPARTITIONEDDISTINCTCOUNT: the distinct values of each segment, summed over the
    segments (exact when no value spans two segments, as for a column partitioned into
    them). The executor aggregates a segment's rows in one call, so the state is that
    call's count per group, and merging adds."""

    name = "segmentpartitioneddistinctcount"
    result_type = "LONG"

    def aggregate(self, block, groups, n_groups):
        if not block.n_rows:
            return (np.zeros(n_groups, dtype=np.int64),)
        return (histogram_from_block(block, groups, n_groups).group_sizes().astype(np.int64),)

    def merge(self, state, groups, n_groups):
        return (np.bincount(groups, weights=state[0], minlength=n_groups).astype(np.int64),)

    def finalize(self, state):
        return state[0].astype(np.int64)
