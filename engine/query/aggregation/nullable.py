"""Aggregations under ``enableNullHandling``, as Pinot's null-aware aggregation functions
(``NullableSingleInputAggregationFunction``) run them:

* every aggregation reads only the rows where its input is not NULL (``null_input``; the
  executor drops the others before aggregating);
* COUNT(col) counts them (COUNT(*) and COUNT(literal) still count every row), and the
  DISTINCTCOUNT family counts the distinct non-NULL values: over no value both are 0;
* every other aggregation of no value is NULL (SUM, MIN, MAX, AVG, MINMAXRANGE, MODE, the
  percentiles, the variances, FIRST/LASTWITHTIME): ``NullSkipping`` carries a count of the
  values aggregated per group beside the function's own state, and finalizes a group that
  had none as NULL.

Without null handling the plan holds the functions themselves; ``with_null_handling`` turns
one list into the other and back, so a plan rebuilt with other options stays right.
"""

from __future__ import annotations

import copy

import numpy as np
import pyarrow as pa

from engine.query.aggregation.base import AggregationFunction, ValueBlock
from engine.query.expressions import Function, Identifier

# Aggregations whose answer over no value is a number (0), not NULL.
_COUNTS = frozenset(
    {
        "count",
        "distinctcount",
        "distinctcounthll",
        "distinctcountrawhll",
        "distinctcounthllplus",
        "distinctcountthetasketch",
        "distinctcountrawthetasketch",
        "segmentpartitioneddistinctcount",
    }
)


def with_null_handling(
    functions: list[AggregationFunction], enabled: bool
) -> list[AggregationFunction]:
    """The plan's aggregations for ``enableNullHandling`` = ``enabled``."""
    plain = [fn.plain for fn in functions]
    return [_null_aware(fn) for fn in plain] if enabled else plain


def _null_aware(fn: AggregationFunction) -> AggregationFunction:
    if fn.name in _COUNTS:
        aware = copy.copy(fn)
        aware._plain = fn
        # COUNT(col) keeps no argument (it needs no values) but skips the column's NULLs;
        # COUNT(*) and COUNT(literal) count every row (CountAggregationFunction)
        counted = fn.counted if fn.name == "count" else fn.argument
        aware.null_input = counted if isinstance(counted, Identifier | Function) else None
        return aware
    return NullSkipping(fn)


class NullSkipping(AggregationFunction):
    """``inner`` over the non-NULL values, NULL for a group with none."""

    def __init__(self, inner: AggregationFunction):
        self.__dict__.update(inner.__dict__)
        self.inner = inner
        self._plain = inner
        self.name = inner.name
        self.result_type = inner.result_type
        self.needs_values = inner.needs_values
        self.state_fields = (*inner.state_fields, "present")
        self.null_input = inner.argument

    def aggregate(self, block: ValueBlock, groups, n_groups: int) -> tuple:
        if groups is None:
            present = np.array([block.n_rows], dtype=np.int64)
        elif block.every_group:
            present = np.ones(n_groups, dtype=np.int64)
        else:
            present = np.bincount(groups, minlength=n_groups).astype(np.int64)
        return (*self.inner.aggregate(block, groups, n_groups), present)

    def merge(self, state, groups, n_groups):
        present = np.bincount(groups, weights=state[-1], minlength=n_groups).astype(np.int64)
        return (*self.inner.merge(state[:-1], groups, n_groups), present)

    def merge_one(self, states):
        present = np.array([sum(int(s[-1][0]) for s in states)], dtype=np.int64)
        return (*self.inner.merge_one([s[:-1] for s in states]), present)

    def finalize(self, state) -> np.ndarray:
        return self.inner.finalize(state[:-1])

    def finalize_nulls(self, state) -> np.ndarray | None:
        return np.asarray(state[-1]) == 0

    def empty_state(self, n_groups: int = 1) -> tuple:
        return (*self.inner.empty_state(n_groups), np.zeros(n_groups, dtype=np.int64))

    def of_parts(self, state: tuple, n_parts: int) -> tuple:
        return (*state, np.ones(n_parts, dtype=np.int64))  # each part holds some values

    def to_arrow(self, state) -> list[pa.Array]:
        return [*self.inner.to_arrow(state[:-1]), pa.array(state[-1], type=pa.int64())]

    def from_arrow(self, columns) -> tuple:
        present = columns[-1].to_numpy(zero_copy_only=False)
        return (*self.inner.from_arrow(columns[:-1]), present)

    def plain_state_codec(self) -> bool:  # type: ignore[override]
        return self.inner.plain_state_codec()

    def take(self, state, index):
        return (*self.inner.take(state[:-1], index), state[-1][index])

    def concat_states(self, states):
        present = np.concatenate([s[-1] for s in states])
        return (*self.inner.concat_states([s[:-1] for s in states]), present)
