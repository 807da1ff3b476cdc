"""COUNT, SUM, MIN, MAX, AVG and MINMAXRANGE with Pinot's result types and empty results:
COUNT -> LONG 0; SUM -> DOUBLE 0.0; MIN -> +Infinity; MAX -> -Infinity; AVG -> -Infinity;
MINMAXRANGE -> -Infinity (max - min of nothing)."""

from __future__ import annotations

import numpy as np

from engine.query.aggregation.base import AggregationFunction, ValueBlock, group_index


def _grouped_sum(groups, values, n_groups):
    return np.bincount(groups, weights=np.asarray(values, dtype=np.float64), minlength=n_groups)


def _grouped_extreme(ufunc, groups, values, n_groups, initial):
    out = np.full(n_groups, initial, dtype=np.float64)
    ufunc.at(out, groups, values)
    return out


class Count(AggregationFunction):
    name = "count"
    result_type = "LONG"
    needs_values = False

    def aggregate(self, block, groups, n_groups):
        if groups is None:
            return (np.array([block.n_rows], dtype=np.int64),)
        return (np.bincount(groups, minlength=n_groups).astype(np.int64),)

    def merge(self, state, groups, n_groups):
        return (np.bincount(groups, weights=state[0], minlength=n_groups).astype(np.int64),)

    def merge_one(self, states):
        # a few numbers: adding them here costs less than numpy's set-up of ``merge``
        return (np.array([sum(int(s[0][0]) for s in states)], dtype=np.int64),)

    def finalize(self, state):
        return state[0].astype(np.int64)


class Sum(AggregationFunction):
    name = "sum"

    def aggregate(self, block: ValueBlock, groups, n_groups):
        if block.dict_ids is not None and groups is None:
            counts = np.bincount(block.dict_ids, minlength=len(block.dictionary))
            used = counts > 0  # an unused infinite value (a NULL's default) is not 0 * inf
            values = block.dictionary[used].astype(np.float64)
            return (np.array([float(np.dot(counts[used], values))]),)
        values = block.values().astype(np.float64, copy=False)
        if groups is None:
            return (np.array([values.sum()], dtype=np.float64),)
        return (_grouped_sum(groups, values, n_groups),)

    def merge(self, state, groups, n_groups):
        return (_grouped_sum(groups, state[0], n_groups),)

    def merge_one(self, states):
        total = 0.0  # added in order, one double at a time: what ``merge``'s bincount does
        for s in states:
            total += float(s[0][0])
        return (np.array([total], dtype=np.float64),)

    def finalize(self, state):
        return state[0].astype(np.float64)


class _Extreme(AggregationFunction):
    ufunc = np.minimum
    initial = np.inf

    def aggregate(self, block: ValueBlock, groups, n_groups):
        if block.n_rows == 0:
            return (np.full(n_groups, self.initial),)
        if block.dict_ids is not None:
            ids = block.dict_ids
            dictionary = block.dictionary.astype(np.float64)
            if groups is None:
                pick = ids.min() if self.ufunc is np.minimum else ids.max()
                return (np.array([dictionary[pick]]),)
            # dictionaries are sorted, so the extreme id is the extreme value
            sentinel = len(dictionary) if self.ufunc is np.minimum else -1
            out = np.full(n_groups, sentinel, dtype=np.int64)
            self.ufunc.at(out, groups, ids)
            missing = out == sentinel
            result = dictionary[np.where(missing, 0, out)]
            result[missing] = self.initial
            return (result,)
        values = block.values().astype(np.float64, copy=False)
        if groups is None:
            return (np.array([values.min() if self.ufunc is np.minimum else values.max()]),)
        return (_grouped_extreme(self.ufunc, groups, values, n_groups, self.initial),)

    def merge(self, state, groups, n_groups):
        return (_grouped_extreme(self.ufunc, groups, state[0], n_groups, self.initial),)

    def finalize(self, state):
        return state[0].astype(np.float64)


class Min(_Extreme):
    name = "min"
    ufunc = np.minimum
    initial = np.inf


class Max(_Extreme):
    name = "max"
    ufunc = np.maximum
    initial = -np.inf


class Avg(AggregationFunction):
    name = "avg"
    state_fields = ("sum", "count")

    def aggregate(self, block, groups, n_groups):
        (total,) = Sum.aggregate(self, block, groups, n_groups)  # type: ignore[arg-type]
        counts = np.bincount(group_index(groups, block.n_rows), minlength=n_groups)
        return (total, counts.astype(np.int64))

    def merge(self, state, groups, n_groups):
        return (
            _grouped_sum(groups, state[0], n_groups),
            np.bincount(groups, weights=state[1], minlength=n_groups).astype(np.int64),
        )

    def finalize(self, state):
        total, counts = state
        with np.errstate(divide="ignore", invalid="ignore"):
            result = total / counts
        return np.where(counts == 0, -np.inf, result)


class MinMaxRange(AggregationFunction):
    name = "minmaxrange"
    state_fields = ("min", "max")

    def aggregate(self, block, groups, n_groups):
        (low,) = Min.aggregate(self._as(Min), block, groups, n_groups)
        (high,) = Max.aggregate(self._as(Max), block, groups, n_groups)
        return (low, high)

    def _as(self, cls):
        twin = cls.__new__(cls)
        twin.__dict__.update(self.__dict__)
        return twin

    def merge(self, state, groups, n_groups):
        return (
            _grouped_extreme(np.minimum, groups, state[0], n_groups, np.inf),
            _grouped_extreme(np.maximum, groups, state[1], n_groups, -np.inf),
        )

    def finalize(self, state):
        return state[1] - state[0]
