"""Approximate percentiles: PERCENTILEEST (DataSketches KLL doubles sketch, k 200, result
LONG), PERCENTILEKLL (the same, DOUBLE) and PERCENTILETDIGEST (fastdigest's t-digest,
compression 100); DISTINCTCOUNTHLL lives in ``hll``. States travel as serialized sketch
bytes, one per group."""

from __future__ import annotations

import datasketches as ds
import fastdigest
import numpy as np
import pyarrow as pa

from engine.query.aggregation.base import AggregationFunction, histogram_from_block
from engine.query.errors import QueryValidationError


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
    """PERCENTILETDIGEST(col, p[, compression]) on fastdigest's t-digest (Rust).

    The digest is fed weighted points: for dictionary-encoded or integer input each distinct
    (group, value) pair once with its row count (a bincount, no sort), so a 5M-row segment
    becomes a few thousand points; other input goes in raw. Compression ``c`` keeps up to
    ``2c`` centroids, the bound of Pinot's merging t-digest for the same compression."""

    name = "percentiletdigest"

    def compression(self) -> int:
        try:
            value = float(self.params[1]) if len(self.params) > 1 else 100.0
        except (TypeError, ValueError):
            value = float("nan")
        if not 1 <= value <= 100_000:
            raise QueryValidationError(
                f"PERCENTILETDIGEST: compression must be in [1, 100000], got {self.params[1]}"
            )
        return int(value)

    def new_sketch(self):
        return fastdigest.TDigest(2 * self.compression())

    def deserialize(self, blob):
        return fastdigest.TDigest.from_bytes(blob)

    def serialize(self, sketch):
        return sketch.to_bytes()

    def merge_into(self, target, other):
        target.merge_inplace(other)

    def add_values(self, sketch, values):
        sketch.batch_update(np.ascontiguousarray(values, dtype=np.float64))

    def aggregate(self, block, groups, n_groups):
        if not block.n_rows or (block.dict_ids is None and block.values().dtype.kind not in "iub"):
            return super().aggregate(block, groups, n_groups)
        hist = histogram_from_block(block, groups, n_groups)
        values = np.asarray(hist.values, dtype=np.float64)
        sketches = []
        for g in range(n_groups):
            lo, hi = hist.offsets[g], hist.offsets[g + 1]
            sketches.append(
                fastdigest.TDigest.from_values(
                    values[lo:hi], hist.counts[lo:hi], max_centroids=2 * self.compression()
                )
                if hi > lo
                else self.new_sketch()
            )
        return (sketches,)

    def finalize(self, state):
        q = float(self.params[0]) / 100.0
        return np.array([_quantile(s, q) for s in state[0]])


def _quantile(digest, q: float) -> float:
    """Pinot's t-digest (``MergingDigest.quantile``, t-digest 3.2) over the digest's
    centroids: NaN for no values; the min below the first unit of weight and the max above
    the last; a centroid of one value answers its value within half a unit of it, else
    neighbouring centroids interpolate by weight. So small inputs give Pinot's figures
    exactly (fastdigest's own interpolation differs)."""
    if digest.is_empty():
        return np.nan
    centroids = digest.centroids
    means = [m for m, _ in centroids]
    weights = [w for _, w in centroids]
    n, total = len(means), float(sum(weights))
    if n == 1:
        return means[0]
    lowest, highest = digest.min(), digest.max()
    index = q * total
    if index < 1:
        return lowest
    if weights[0] > 1 and index < weights[0] / 2:
        return lowest + (index - 1) / (weights[0] / 2 - 1) * (means[0] - lowest)
    if index > total - 1:
        return highest
    if weights[-1] > 1 and total - index <= weights[-1] / 2:
        return highest - (total - index - 1) / (weights[-1] / 2 - 1) * (highest - means[-1])
    so_far = weights[0] / 2
    for i in range(n - 1):
        step = (weights[i] + weights[i + 1]) / 2
        if so_far + step > index:
            left_unit = right_unit = 0.0
            if weights[i] == 1:
                if index - so_far < 0.5:
                    return means[i]
                left_unit = 0.5
            if weights[i + 1] == 1:
                if so_far + step - index <= 0.5:
                    return means[i + 1]
                right_unit = 0.5
            z1 = index - so_far - left_unit
            z2 = so_far + step - index - right_unit
            return _weighted(means[i], z2, means[i + 1], z1)
        so_far += step
    z1 = index - total - weights[-1] / 2.0
    return _weighted(means[-1], z1, highest, weights[-1] / 2 - z1)


def _weighted(x1: float, w1: float, x2: float, w2: float) -> float:
    """t-digest's ``weightedAverage``: the mean by weight, kept between the two values."""
    low, high = min(x1, x2), max(x1, x2)
    return max(low, min(high, (x1 * w1 + x2 * w2) / (w1 + w2)))


class PercentileKLL(PercentileEst):
    """PERCENTILEKLL: the same KLL sketch, returning DOUBLE as Pinot does, and with the
    Java library's default rank criterion (INCLUSIVE: the smallest value whose rank reaches
    p; the Python binding's default is exclusive)."""

    name = "percentilekll"
    result_type = "DOUBLE"

    def finalize(self, state):
        q = float(self.params[0]) / 100.0
        return np.array([s.get_quantile(q, True) if not s.is_empty() else np.nan
                         for s in state[0]])  # fmt: skip
