"""Range predicates answered from min/max values instead of a scan.

A segment whose ``[min, max]`` lies inside the range matches every doc, one outside it none
(for the rest of the filter tree too, not only at pruning time). Inside a segment, a raw
numeric column keeps a zone map (min/max per block of docs, built once per loaded segment):
blocks inside the range are taken whole, blocks outside skipped, and only the few blocks that
straddle a bound are scanned. On a column whose values follow the doc order, like an
event-time column, a one-day range then reads two blocks instead of the whole segment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.query.docset import DocSet

BLOCK_ROWS = 4096
# Past this many runs of straddling blocks the values are not clustered: one vectorised scan
# of the whole column beats a Python loop over runs.
MAX_PARTIAL_RUNS = 64


@dataclass(frozen=True)
class RangeBounds:
    """``lo <(=) value <(=) hi``; a missing side (None) is unbounded."""

    lo: float | int | None
    lo_inclusive: bool
    hi: float | int | None
    hi_inclusive: bool

    @classmethod
    def of(cls, op: str, operands: tuple) -> RangeBounds:
        if op == "between":
            return cls(operands[0], True, operands[1], True)
        if op in ("less_than", "less_than_or_equal"):
            return cls(None, True, operands[0], op == "less_than_or_equal")
        return cls(operands[0], op == "greater_than_or_equal", None, True)

    def above_lo(self, values):
        if self.lo is None:
            return np.ones(np.shape(values), dtype=bool)
        return values >= self.lo if self.lo_inclusive else values > self.lo

    def below_hi(self, values):
        if self.hi is None:
            return np.ones(np.shape(values), dtype=bool)
        return values <= self.hi if self.hi_inclusive else values < self.hi

    def test(self, values: np.ndarray) -> np.ndarray:
        return self.above_lo(values) & self.below_hi(values)

    def covers(self, low, high):
        """Every value in ``[low, high]`` matches."""
        return self.above_lo(low) & self.below_hi(high)

    def misses(self, low, high):
        """No value in ``[low, high]`` can match."""
        # logical_not, not ~: on the Python bools of scalar min/max, ~True is -2
        return np.logical_not(self.above_lo(high)) | np.logical_not(self.below_hi(low))

    def on_min_max(self, low, high) -> bool | None:
        """True when a segment with these min/max values matches wholly, False when not at
        all, None when it must be looked at (or the bounds are unknown or not comparable)."""
        if low is None or high is None:
            return None
        try:
            if bool(self.covers(low, high)):
                return True
            if bool(self.misses(low, high)):
                return False
        except TypeError:
            return None
        return None


def zone_scan(view, column: str, bounds: RangeBounds) -> tuple[DocSet, int] | None:
    """(matching docs, entries scanned) of a raw numeric SV column through its zone map, or
    None when the column's values are not clustered enough for the zone map to pay."""
    values = view.sv_values(column, None)
    if values.dtype.kind not in "iuf" or not len(values):
        return None
    mins, maxs = view.block_bounds(column, BLOCK_ROWS)
    # per block: 0 no doc matches, 1 some may, 2 all do
    kind = np.where(bounds.covers(mins, maxs), 2, np.where(bounds.misses(mins, maxs), 0, 1))
    starts = np.flatnonzero(np.concatenate([[True], kind[1:] != kind[:-1]]))
    ends = np.append(starts[1:], len(kind))
    kinds = kind[starts]
    partial_runs = int(np.count_nonzero(kinds == 1))
    partial_blocks = int(np.count_nonzero(kind == 1))
    if partial_runs > MAX_PARTIAL_RUNS or partial_blocks * BLOCK_ROWS > len(values) // 4:
        return None
    pieces, scanned = [], 0
    for first, last, run_kind in zip(starts.tolist(), ends.tolist(), kinds.tolist(), strict=True):
        a, b = first * BLOCK_ROWS, min(last * BLOCK_ROWS, len(values))
        if run_kind == 2:
            pieces.append(np.arange(a, b, dtype=np.int64))
        elif run_kind == 1:
            scanned += b - a
            pieces.append(np.flatnonzero(bounds.test(values[a:b])) + a)
    ids = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    n = view.n
    if len(ids) and ids[-1] - ids[0] + 1 == len(ids):
        return DocSet.range(n, int(ids[0]), int(ids[-1]) + 1), scanned  # slices, no gather
    return DocSet.of_ids(n, ids), scanned
