"""Variance and standard deviation (VARPOP, VARSAMP, STDDEVPOP, STDDEVSAMP), SKEWNESS and
KURTOSIS, and FIRSTWITHTIME / LASTWITHTIME.

Variance states are (count, mean, M2) per group, merged with Chan et al.'s parallel update,
which keeps precision where sum-of-squares would cancel. FIRST/LASTWITHTIME keep the
(time, value) of the earliest/latest row per group; ties on time keep the smaller value
(FIRST) or the larger value (LAST)."""

from __future__ import annotations

import numpy as np

from engine.query.aggregation.base import AggregationFunction, group_index


class _Moments(AggregationFunction):
    state_fields = ("count", "mean", "m2")
    sample = False
    root = False

    def aggregate(self, block, groups, n_groups):
        values, g, count, mean = _count_and_mean(block, groups, n_groups)
        m2 = np.bincount(g, weights=(values - mean[g]) ** 2, minlength=n_groups)
        return (count, mean, m2)

    def merge(self, state, groups, n_groups):
        count, mean, m2 = state
        total = np.bincount(groups, weights=count, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            merged_mean = np.bincount(groups, weights=count * mean, minlength=n_groups) / total
        merged_mean = np.where(total > 0, merged_mean, 0.0)
        spread = m2 + count * (mean - merged_mean[groups]) ** 2
        return (total, merged_mean, np.bincount(groups, weights=spread, minlength=n_groups))

    def finalize(self, state):
        count, _, m2 = state
        denominator = count - 1 if self.sample else count
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = np.where(denominator > 0, m2 / denominator, np.nan)
        return np.sqrt(variance) if self.root else variance


class VarPop(_Moments):
    name = "varpop"


class VarSamp(_Moments):
    name = "varsamp"
    sample = True


class StddevPop(_Moments):
    name = "stddevpop"
    root = True


class StddevSamp(_Moments):
    name = "stddevsamp"
    sample = True
    root = True


class _WithTime(AggregationFunction):
    """FIRSTWITHTIME(value, time, 'TYPE'): the argument is the value; ``time_argument`` the
    time expression; the result type is the literal type."""

    state_fields = ("time", "value", "present")
    earliest = True

    def __init__(self, call, argument, params=()):
        super().__init__(call, argument, params)
        self.time_argument = None  # set by create_aggregation
        self.result_type = str(params[0]).upper() if params else "DOUBLE"

    def aggregate(self, block, groups, n_groups):
        values = np.asarray(block.values()) if block.n_rows else np.empty(0)
        times = np.asarray(block.times, dtype=np.float64) if block.n_rows else np.empty(0)
        return self._pick(
            times, values, group_index(groups, len(values)), n_groups, np.ones(len(values), bool)
        )

    def merge(self, state, groups, n_groups):
        times, values, present = state
        return self._pick(times, values, groups, n_groups, present.astype(bool))

    def _pick(self, times, values, groups, n_groups, present):
        idx = np.flatnonzero(present)
        times, values, groups = times[idx], values[idx], groups[idx]
        # order rows so the wanted one comes first in each group, then take the first
        sort_values = (
            values if values.dtype.kind in "iufb" else np.unique(values, return_inverse=True)[1]
        )
        key_time = times if self.earliest else -times
        key_value = sort_values if self.earliest else -sort_values.astype(np.float64)
        order = np.lexsort((key_value, key_time, groups))
        first = np.ones(len(order), dtype=bool)
        first[1:] = groups[order][1:] != groups[order][:-1]
        chosen = order[first]
        out_times = np.zeros(n_groups)
        out_values = (
            np.zeros(n_groups, dtype=values.dtype)
            if values.dtype != object
            else np.full(n_groups, "", dtype=object)
        )
        out_present = np.zeros(n_groups, dtype=bool)
        out_times[groups[chosen]] = times[chosen]
        out_values[groups[chosen]] = values[chosen]
        out_present[groups[chosen]] = True
        return (out_times, out_values, out_present)

    def finalize(self, state):
        _, values, present = state
        if values.dtype == object:
            return np.where(present, values, "null")
        return np.where(present, values.astype(np.float64), -np.inf)


class FirstWithTime(_WithTime):
    name = "firstwithtime"


class LastWithTime(_WithTime):
    name = "lastwithtime"
    earliest = False


class _FourthMoments(AggregationFunction):
    """SKEWNESS and KURTOSIS: Pinot's ``PinotFourthMoment`` (count, mean and the 2nd to 4th
    central moment sums) per group, finished by commons-math's bias-corrected formulas."""

    state_fields = ("count", "mean", "m2", "m3", "m4")

    def aggregate(self, block, groups, n_groups):
        values, g, count, mean = _count_and_mean(block, groups, n_groups)
        d = values - mean[g]
        sums = [np.bincount(g, weights=d**k, minlength=n_groups) for k in (2, 3, 4)]
        return (count, mean, *sums)

    def merge(self, state, groups, n_groups):
        """Each part's central sums moved to the merged mean (exact for any number of
        parts), then added up."""
        count, mean, m2, m3, m4 = state
        total = np.bincount(groups, weights=count, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            merged = np.bincount(groups, weights=count * mean, minlength=n_groups) / total
        merged = np.where(total > 0, merged, 0.0)
        d = np.where(count > 0, mean - merged[groups], 0.0)
        shifted = (
            m2 + count * d**2,
            m3 + 3 * d * m2 + count * d**3,
            m4 + 4 * d * m3 + 6 * d**2 * m2 + count * d**4,
        )
        return (total, merged, *(np.bincount(groups, weights=s, minlength=n_groups)
                                 for s in shifted))  # fmt: skip


class Skewness(_FourthMoments):
    name = "skewness"

    def finalize(self, state):
        n, _, m2, m3, _ = state
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = m2 / (n - 1)
            skew = n * m3 / ((n - 1) * (n - 2) * np.sqrt(variance) * variance)
        return np.where(n < 3, np.nan, np.where(variance < 1e-19, 0.0, skew))


class Kurtosis(_FourthMoments):
    name = "kurtosis"

    def finalize(self, state):
        n, _, m2, _, m4 = state
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = m2 / (n - 1)
            prefix = n * (n + 1) / ((n - 1) * (n - 2) * (n - 3))
            suffix = 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))
            kurt = prefix * m4 / variance**2 - suffix
        return np.where(n < 4, np.nan, np.where(variance < 1e-19, 0.0, kurt))


def _count_and_mean(block, groups, n_groups):
    """The block's values as doubles, each row's group, and per group the count and the mean
    (0 where a group has no value): the first moments every moment state starts from."""
    values = np.asarray(block.values(), dtype=np.float64) if block.n_rows else np.empty(0)
    g = group_index(groups, len(values))
    count = np.bincount(g, minlength=n_groups).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(g, weights=values, minlength=n_groups) / count
    return values, g, count, np.where(count > 0, mean, 0.0)
