"""Approximate aggregations on Apache DataSketches: DISTINCTCOUNTHLL (HLL, lg_k 12 unless
given), PERCENTILEEST (KLL doubles sketch, k 200, result LONG) and PERCENTILETDIGEST
(t-digest, compression 100). States travel as serialized sketch bytes, one per group."""

from __future__ import annotations

from collections import deque

import datasketches as ds
import numpy as np
import pyarrow as pa

from engine.query.aggregation.base import AggregationFunction, histogram_from_block


class _SketchAggregation(AggregationFunction):
    state_fields = ("sketch",)

    def new_sketch(self):
        raise NotImplementedError

    def deserialize(self, blob: bytes):
        raise NotImplementedError

    def serialize(self, sketch) -> bytes:
        return sketch.serialize()

    def add_values(self, sketch, values: np.ndarray) -> None:
        sketch.update(np.ascontiguousarray(values, dtype=np.float64))

    def merge_into(self, target, other) -> None:
        target.merge(other)

    def aggregate(self, block, groups, n_groups):
        sketches = [self.new_sketch() for _ in range(n_groups)]
        if block.n_rows:
            values = block.values()
            if groups is None:
                self.add_values(sketches[0], values)
            else:
                order = np.argsort(groups, kind="stable")
                bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
                sorted_values = values[order]
                for g in range(n_groups):
                    if bounds[g] < bounds[g + 1]:
                        self.add_values(sketches[g], sorted_values[bounds[g] : bounds[g + 1]])
        return (sketches,)

    def merge(self, state, groups, n_groups):
        merged = [None] * n_groups
        for blob, g in zip(state[0], groups.tolist(), strict=True):
            sketch = blob
            if merged[g] is None:
                merged[g] = self.new_sketch()
            self.merge_into(merged[g], sketch)
        return ([m if m is not None else self.new_sketch() for m in merged],)

    def to_arrow(self, state):
        return [pa.array([self.serialize(s) for s in state[0]], type=pa.binary())]

    def from_arrow(self, columns):
        return ([self.deserialize(blob) for blob in columns[0].to_pylist()],)

    def take(self, state, index):
        return ([state[0][i] for i in index.tolist()],)

    def concat_states(self, states):
        return ([sketch for s in states for sketch in s[0]],)


class DistinctCountHLL(_SketchAggregation):
    name = "distinctcounthll"
    result_type = "LONG"

    def lg_k(self) -> int:
        return int(self.params[0]) if self.params else 12

    def new_sketch(self):
        return _HllUnion(self.lg_k())

    def deserialize(self, blob):
        union = _HllUnion(self.lg_k())
        union.add(ds.hll_sketch.deserialize(blob))
        return union

    def serialize(self, sketch):
        return sketch.result().serialize_compact()

    def merge_into(self, target, other):
        target.add(other.result())

    def aggregate(self, block, groups, n_groups):
        # Hash each distinct (group, value) pair once instead of every row.
        hist = histogram_from_block(block, groups, n_groups)
        values = hist.values.tolist()
        sketches = []
        for g in range(n_groups):
            sketch = ds.hll_sketch(self.lg_k())
            deque(map(sketch.update, values[hist.offsets[g] : hist.offsets[g + 1]]), maxlen=0)
            union = _HllUnion(self.lg_k())
            union.add(sketch)
            sketches.append(union)
        return (sketches,)

    def finalize(self, state):
        return np.array([round(s.result().get_estimate()) for s in state[0]], dtype=np.int64)


class _HllUnion:
    """An hll_union that keeps its lg_k (datasketches needs it on every result call)."""

    def __init__(self, lg_k: int):
        self.union = ds.hll_union(lg_k)

    def add(self, sketch) -> None:
        self.union.update(sketch)

    def result(self):
        return self.union.get_result(ds.tgt_hll_type.HLL_4)


class PercentileEst(_SketchAggregation):
    name = "percentileest"
    result_type = "LONG"

    def new_sketch(self):
        return ds.kll_doubles_sketch(200)

    def deserialize(self, blob):
        return ds.kll_doubles_sketch.deserialize(blob)

    def finalize(self, state):
        q = float(self.params[0]) / 100.0
        return np.array(
            [
                int(s.get_quantile(q)) if not s.is_empty() else np.iinfo(np.int64).min
                for s in state[0]
            ],
            dtype=np.int64,
        )


class PercentileTDigest(_SketchAggregation):
    name = "percentiletdigest"

    def compression(self) -> int:
        return int(self.params[1]) if len(self.params) > 1 else 100

    def new_sketch(self):
        return ds.tdigest_double(self.compression())

    def deserialize(self, blob):
        return ds.tdigest_double.deserialize(blob)

    def finalize(self, state):
        q = float(self.params[0]) / 100.0
        return np.array([_tdigest_quantile(s, q) if not s.is_empty() else np.nan for s in state[0]])


def _tdigest_quantile(sketch, q: float) -> float:
    """The value whose rank is ``q``, found by bisecting ``get_rank``: datasketches 5.2's
    t-digest ranks accurately but its ``get_quantile`` interpolates poorly (the median of
    uniform [0, 1) came out as 0.536), so the quantile is taken from the rank function."""
    low, high = sketch.get_min_value(), sketch.get_max_value()
    for _ in range(64):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if sketch.get_rank(middle) < q:
            low = middle
        else:
            high = middle
    return high


class PercentileKLL(PercentileEst):
    """PERCENTILEKLL: the same KLL sketch, returning DOUBLE as Pinot does."""

    name = "percentilekll"
    result_type = "DOUBLE"

    def finalize(self, state):
        q = float(self.params[0]) / 100.0
        return np.array([s.get_quantile(q) if not s.is_empty() else np.nan for s in state[0]])
