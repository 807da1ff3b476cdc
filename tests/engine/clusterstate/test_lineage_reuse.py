"""The routing rule over every lineage state the replacement protocol passes through when a
retried replacement reuses its outputs' names (first attempt reverted while its C is
ONLINE, the name moved to the retry's entry in the same write), for every subset of the
segments a broker may see served (A and B always; C anywhere from absent to served): every
row is routed exactly once."""

from __future__ import annotations

import itertools

import pytest

from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    lineage_consistent_segments,
)

IN_PROGRESS = LineageEntryState.IN_PROGRESS
COMPLETED = LineageEntryState.COMPLETED
REVERTED = LineageEntryState.REVERTED
# rows per segment: C holds exactly A's and B's rows; X is an unrelated segment
ROWS = {"a": {1, 2}, "b": {3}, "c": {1, 2, 3}, "x": {4}}


def entry(state: LineageEntryState, to: tuple[str, ...] = ("c",)) -> LineageEntry:
    return LineageEntry(("a", "b"), to, state, 1)


# the lineage after each write of (C exists only once an entry hides it): start, end, revert, start again (reclaiming C from the
# reverted entry), forceCleanup retry (the second entry reverted, C moved to the third), end,
# revert; then retention dropping the spent entries
PROTOCOL = [
    {"e1": entry(IN_PROGRESS)},
    {"e1": entry(COMPLETED)},
    {"e1": entry(REVERTED)},
    {"e1": entry(REVERTED, ()), "e2": entry(IN_PROGRESS)},
    {"e1": entry(REVERTED, ()), "e2": entry(REVERTED, ()), "e3": entry(IN_PROGRESS)},
    {"e1": entry(REVERTED, ()), "e2": entry(REVERTED, ()), "e3": entry(COMPLETED)},
    {"e1": entry(REVERTED, ()), "e2": entry(REVERTED, ()), "e3": entry(REVERTED)},
]


@pytest.mark.parametrize("step", range(len(PROTOCOL)))
def test_every_row_is_routed_once_in_every_state(step):
    lineage = SegmentLineage("t_OFFLINE", PROTOCOL[step])
    # a and b stay ONLINE throughout (retention deletes them only after the swap's period);
    # c may be anywhere between not uploaded and served
    for with_c in (False, True):
        present = ["a", "b", "x", *(["c"] if with_c else [])]
        for k in range(len(present) + 1):
            for served in itertools.combinations(present, k):
                if not {"a", "b", "x"} <= set(served):
                    continue
                kept = lineage_consistent_segments(present, lineage, served)
                routed = [row for s in kept if s in served for row in ROWS[s]]
                assert sorted(routed) == [1, 2, 3, 4], (step, present, served, kept)
