"""DISTINCTCOUNTTHETASKETCH(col[, 'nominalEntries=n']) (LONG, the rounded estimate) and
DISTINCTCOUNTRAWTHETASKETCH (the sketch as Pinot's text) on Apache DataSketches theta
sketches, one per group; states travel as serialized compact sketches and merge by union.
Pinot's extra arguments (filter predicates and a post-aggregation set expression) are
refused with a clear error rather than ignored."""

from __future__ import annotations

import math

import datasketches as ds
import numpy as np
import pyarrow as pa

from engine.functions.sketch import DEFAULT_LG_K, new_theta, theta_text, union_of, update_theta
from engine.query.aggregation.base import AggregationFunction, histogram_from_block
from engine.query.errors import QueryValidationError


class DistinctCountThetaSketch(AggregationFunction):
    name = "distinctcountthetasketch"
    result_type = "LONG"
    state_fields = ("sketch",)

    def lg_k(self) -> int:
        """From Pinot's parameter text, ``nominalEntries=16384`` (';'-separated keys)."""
        if len(self.params) > 1:
            raise QueryValidationError(
                f"{self.name.upper()}: filter predicates and post-aggregation expressions "
                "are not supported"
            )
        text = str(self.params[0]) if self.params else ""
        for part in text.split(";"):
            key, _, value = part.partition("=")
            if key.strip().lower() == "nominalentries":
                try:
                    entries = int(value)
                except ValueError:
                    entries = 0
                if entries < 1:
                    raise QueryValidationError(
                        f"{self.name.upper()}: nominalEntries must be a positive integer, "
                        f"got {value!r}"
                    )
                return max(1, math.ceil(math.log2(entries)))
        return DEFAULT_LG_K

    def aggregate(self, block, groups, n_groups):
        lg_k = self.lg_k()
        sketches = [new_theta(lg_k) for _ in range(n_groups)]
        if block.n_rows:
            hist = histogram_from_block(block, groups, n_groups)  # each distinct value once
            for g in range(n_groups):
                lo, hi = hist.offsets[g], hist.offsets[g + 1]
                if hi > lo:
                    update_theta(sketches[g], hist.values[lo:hi])
        return ([s.compact() for s in sketches],)

    def merge(self, state, groups, n_groups):
        parts: list[list] = [[] for _ in range(n_groups)]
        for sketch, g in zip(state[0], groups.tolist(), strict=True):
            parts[g].append(sketch)
        return ([union_of(p, self.lg_k()) for p in parts],)

    def finalize(self, state):
        return np.array([int(np.floor(s.get_estimate() + 0.5)) for s in state[0]], np.int64)

    def to_arrow(self, state):
        return [pa.array([s.serialize() for s in state[0]], type=pa.binary())]

    def from_arrow(self, columns):
        return ([ds.compact_theta_sketch.deserialize(b) for b in columns[0].to_pylist()],)

    def take(self, state, index):
        return ([state[0][i] for i in index.tolist()],)

    def concat_states(self, states):
        return ([sketch for s in states for sketch in s[0]],)


class DistinctCountRawThetaSketch(DistinctCountThetaSketch):
    name = "distinctcountrawthetasketch"
    result_type = "STRING"

    def finalize(self, state):
        return np.array([theta_text(s) for s in state[0]], dtype=object)
