"""Aggregation kernels: correct per group, and merging split states (after an Arrow round
trip, as between servers) gives the same answer as aggregating everything at once."""

from __future__ import annotations

import numpy as np
import pytest

from engine.query.aggregation import ValueBlock, create_aggregation, with_null_handling
from engine.query.errors import QueryValidationError
from engine.query.expressions import Function, Identifier, Literal

RNG = np.random.default_rng(7)
N, GROUPS = 5000, 37
VALUES = RNG.integers(-50, 200, N).astype(np.float64)
GROUP_OF = RNG.integers(0, GROUPS, N)


def make(name: str, *params):
    return create_aggregation(Function(name, (Identifier("x"), *(Literal(p) for p in params))))


def brute(name: str, values: np.ndarray, params=()):
    if name == "count":
        return len(values)
    if name == "sum":
        return values.sum()
    if name == "min":
        return values.min()
    if name == "max":
        return values.max()
    if name == "avg":
        return values.mean()
    if name == "minmaxrange":
        return values.max() - values.min()
    if name == "distinctcount":
        return len(np.unique(values))
    if name == "percentile":
        ordered = np.sort(values)
        return ordered[min(int(len(values) * params[0] / 100), len(values) - 1)]
    if name == "mode":
        distinct, counts = np.unique(values, return_counts=True)
        return distinct[np.argmax(counts)]
    raise AssertionError(name)


EXACT = [("count", ()), ("sum", ()), ("min", ()), ("max", ()), ("avg", ()), ("minmaxrange", ()),
         ("distinctcount", ()), ("percentile", (90,)), ("percentile", (50,)), ("mode", ())]  # fmt: skip


def _split_and_merge(fn, values, groups, n_groups, parts=4):
    """Aggregate ``parts`` slices with slice-local group ids, ship each state through Arrow,
    then merge by global group id."""
    states, global_ids = [], []
    for chunk in np.array_split(np.arange(len(values)), parts):
        local_groups, local = np.unique(groups[chunk], return_inverse=True)
        state = fn.aggregate(
            ValueBlock(len(chunk), raw=values[chunk]), local.reshape(-1), len(local_groups)
        )
        states.append(fn.from_arrow(fn.to_arrow(state)))
        global_ids.append(local_groups)
    return fn.merge(fn.concat_states(states), np.concatenate(global_ids), n_groups)


@pytest.mark.parametrize(("name", "params"), EXACT)
def test_exact_aggregations_per_group_and_after_merge(name, params):
    fn = make(name, *params)
    whole = fn.finalize(fn.aggregate(ValueBlock(N, raw=VALUES), GROUP_OF, GROUPS))
    expected = [brute(name, VALUES[g == GROUP_OF], params) for g in range(GROUPS)]
    np.testing.assert_allclose(whole, expected)
    merged = fn.finalize(_split_and_merge(fn, VALUES, GROUP_OF, GROUPS))
    np.testing.assert_allclose(merged, expected)


@pytest.mark.parametrize(("name", "params"), EXACT)
def test_merge_one_is_merge_of_single_group_states(name, params):
    """``merge_one`` (no GROUP BY, combined over segments) is exactly ``merge`` of the
    concatenated states, bit for bit, and the whole column's answer; empty parts included.
    The last parts' sums round differently in another order (1e16 + 1 == 1e16)."""
    fn = make(name, *params)
    values = np.random.default_rng(3).normal(0, 1e6, 999)  # not RNG: later tests draw from it
    parts = [values[:0], *np.array_split(values, 7), values[:0]]
    states = [fn.aggregate(ValueBlock(len(p), raw=p), None, 1) for p in parts]
    one = fn.merge_one([fn.from_arrow(fn.to_arrow(s)) for s in states])
    np.testing.assert_allclose(fn.finalize(one), [brute(name, values, params)], rtol=1e-9)
    for odd in ([1e16], [1.0], [-1e16], [1.0]):
        states.append(fn.aggregate(ValueBlock(1, raw=np.array(odd)), None, 1))
    shipped = [fn.from_arrow(fn.to_arrow(s)) for s in states]
    one = fn.merge_one(shipped)
    reference = fn.merge(fn.concat_states(shipped), np.zeros(len(shipped), dtype=np.int64), 1)
    assert np.array_equal(fn.finalize(one), fn.finalize(reference))
    for got, expected in zip(one, reference, strict=True):
        if isinstance(expected, np.ndarray):  # same dtype, same bits
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


@pytest.mark.parametrize(("name", "params"), EXACT)
def test_dictionary_encoded_input_matches_raw(name, params):
    fn = make(name, *params)
    dictionary, ids = np.unique(VALUES, return_inverse=True)
    by_dict = fn.finalize(
        fn.aggregate(
            ValueBlock(N, dict_ids=ids.astype(np.uint16), dictionary=dictionary), GROUP_OF, GROUPS
        )
    )
    by_raw = fn.finalize(fn.aggregate(ValueBlock(N, raw=VALUES), GROUP_OF, GROUPS))
    np.testing.assert_allclose(by_dict, by_raw)
    single = fn.finalize(fn.aggregate(ValueBlock(N, dict_ids=ids, dictionary=dictionary), None, 1))
    np.testing.assert_allclose(single, [brute(name, VALUES, params)])


def test_pinot_defaults_over_no_rows():
    empty = ValueBlock(0, raw=np.empty(0))
    results = {
        name: make(name).finalize(make(name).aggregate(empty, None, 1))[0]
        for name in ("count", "sum", "min", "max", "avg")
    }
    assert results == {"count": 0, "sum": 0.0, "min": np.inf, "max": -np.inf, "avg": -np.inf}
    assert (
        make("percentile", 50).finalize(make("percentile", 50).aggregate(empty, None, 1))[0]
        == -np.inf
    )


def test_hll_is_close_and_merges_like_one_sketch():
    values = RNG.integers(0, 20_000, 60_000).astype(np.float64)
    groups = np.zeros(len(values), dtype=np.int64)
    fn = make("distinctcounthll")
    exact = len(np.unique(values))
    whole = fn.finalize(fn.aggregate(ValueBlock(len(values), raw=values), groups, 1))[0]
    merged = fn.finalize(_split_and_merge(fn, values, groups, 1, parts=5))[0]
    assert abs(whole - exact) / exact < 0.05
    assert abs(merged - exact) / exact < 0.05
    assert fn.result_type == "LONG"


@pytest.mark.parametrize("name", ["percentileest", "percentiletdigest"])
def test_approximate_percentiles_are_close_after_merge(name):
    values = RNG.normal(100, 15, 40_000)
    groups = np.zeros(len(values), dtype=np.int64)
    fn = make(name, 90)
    exact = np.percentile(values, 90)
    merged = fn.finalize(_split_and_merge(fn, values, groups, 1, parts=4))[0]
    assert abs(merged - exact) < 2.0


def test_percentile_name_suffix_and_mv_variants():
    fn = create_aggregation(Function("percentile95", (Identifier("x"),)))
    assert fn.name == "percentile" and fn.params == (95.0,)
    mv = create_aggregation(Function("summv", (Identifier("x"),)))
    assert mv.name == "sum" and mv.multi_value
    assert create_aggregation(Function("countmv", (Identifier("x"),))).result_type == "LONG"


def test_take_keeps_the_chosen_groups():
    for name, params in EXACT:
        fn = make(name, *params)
        state = fn.aggregate(ValueBlock(N, raw=VALUES), GROUP_OF, GROUPS)
        pick = np.array([3, 0, 20])
        np.testing.assert_allclose(fn.finalize(fn.take(state, pick)), fn.finalize(state)[pick])


@pytest.mark.parametrize("p", [1, 50, 95, 99])
def test_tdigest_percentiles_are_accurate_on_uniform_data(p):
    values = RNG.random(300_000)
    fn = make("percentiletdigest", p)
    got = fn.finalize(fn.aggregate(ValueBlock(len(values), raw=values), None, 1))[0]
    assert abs(got - np.percentile(values, p)) < 0.005


@pytest.mark.parametrize(("name", "ddof", "root"), [("varpop", 0, False), ("varsamp", 1, False),
                                                    ("stddevpop", 0, True), ("stddev_samp", 1, True)])  # fmt: skip
def test_variance_family_per_group_and_after_merge(name, ddof, root):
    fn = make(name)
    expected = [np.var(VALUES[g == GROUP_OF], ddof=ddof) for g in range(GROUPS)]
    expected = np.sqrt(expected) if root else expected
    np.testing.assert_allclose(
        fn.finalize(fn.aggregate(ValueBlock(N, raw=VALUES), GROUP_OF, GROUPS)), expected
    )
    np.testing.assert_allclose(
        fn.finalize(_split_and_merge(fn, VALUES, GROUP_OF, GROUPS)), expected
    )


@pytest.mark.parametrize("name", ["firstwithtime", "lastwithtime"])
def test_first_and_last_with_time(name):
    times = RNG.permutation(N).astype(np.float64)  # distinct times
    fn = create_aggregation(Function(name, (Identifier("x"), Identifier("t"), Literal("DOUBLE"))))
    pick = np.argmin if name == "firstwithtime" else np.argmax
    expected = [VALUES[g == GROUP_OF][pick(times[g == GROUP_OF])] for g in range(GROUPS)]
    whole = fn.aggregate(ValueBlock(N, raw=VALUES, times=times), GROUP_OF, GROUPS)
    np.testing.assert_allclose(fn.finalize(whole), expected)
    states, ids = [], []
    for chunk in np.array_split(np.arange(N), 3):
        local_groups, local = np.unique(GROUP_OF[chunk], return_inverse=True)
        block = ValueBlock(len(chunk), raw=VALUES[chunk], times=times[chunk])
        states.append(
            fn.from_arrow(fn.to_arrow(fn.aggregate(block, local.reshape(-1), len(local_groups))))
        )
        ids.append(local_groups)
    merged = fn.merge(fn.concat_states(states), np.concatenate(ids), GROUPS)
    np.testing.assert_allclose(fn.finalize(merged), expected)


@pytest.mark.parametrize("dictionary_encoded", [False, True])
@pytest.mark.parametrize("p", [5, 50, 95, 99.9])
def test_tdigest_matches_numpy_percentile_per_group_after_merge(p, dictionary_encoded):
    """Integer latencies (the weighted (value, count) path) in 3 groups, split over 4
    'segments' shipped through Arrow: each group's estimate is within 1% of numpy's exact
    percentile of that group."""
    values = RNG.gamma(2.0, 60.0, 120_000).astype(np.int64)
    groups = RNG.integers(0, 3, len(values))
    fn = make("percentiletdigest", p)
    whole = fn.finalize(
        fn.aggregate(
            ValueBlock(len(values), *_encoded(values)) if dictionary_encoded
            else ValueBlock(len(values), raw=values), groups, 3,
        )
    )  # fmt: skip
    merged = fn.finalize(_split_and_merge(fn, values, groups, 3, parts=4))
    for g in range(3):
        exact = np.percentile(values[groups == g], p)
        assert abs(whole[g] - exact) <= 0.01 * exact + 1
        assert abs(merged[g] - exact) <= 0.01 * exact + 1


def _encoded(values):
    dictionary, ids = np.unique(values, return_inverse=True)
    return ids.reshape(-1), dictionary


def test_tdigest_raw_doubles_and_empty_groups():
    values = RNG.lognormal(1.0, 1.0, 50_000)
    fn = make("percentiletdigest", 90, 200)
    got = fn.finalize(_split_and_merge(fn, values, np.zeros(len(values), np.int64), 2, parts=3))
    assert abs(got[0] - np.percentile(values, 90)) / np.percentile(values, 90) < 0.01
    assert np.isnan(got[1])  # a group no row reached: NaN, as before


def test_tdigest_extreme_percentiles_are_min_and_max():
    values = RNG.random(20_000)
    for p, expected in ((0, values.min()), (100, values.max())):
        fn = make("percentiletdigest", p)
        assert (
            fn.finalize(_split_and_merge(fn, values, np.zeros(len(values), np.int64), 1))[0]
            == expected
        )


@pytest.mark.parametrize("compression", [0, "x", 1e9])
def test_tdigest_rejects_a_bad_compression(compression):
    fn = make("percentiletdigest", 50, compression)
    with pytest.raises(QueryValidationError, match="compression"):
        fn.aggregate(ValueBlock(3, raw=np.array([1, 2, 3])), None, 1)


def test_sum_of_dictionary_ids_ignores_unused_infinite_values():
    """A dictionary holds a NULL's default (-Infinity) that no selected row uses (a filter or
    null handling dropped those rows): 0 * -inf must not turn the sum into NaN."""
    dictionary = np.array([-np.inf, 1.5, 2.0])
    block = ValueBlock(3, dict_ids=np.array([1, 2, 2]), dictionary=dictionary)
    assert make("sum").finalize(make("sum").aggregate(block, None, 1))[0] == 5.5
    empty = ValueBlock(0, dict_ids=np.zeros(0, dtype=np.int64), dictionary=dictionary)
    assert make("sum").finalize(make("sum").aggregate(empty, None, 1))[0] == 0.0


@pytest.mark.parametrize("name, params", [("sum", ()), ("min", ()), ("avg", ()), ("percentile", (50,)),
                                          ("minmaxrange", ()), ("mode", ()), ("varsamp", ())])  # fmt: skip
def test_with_null_handling_an_aggregation_of_no_value_is_null(name, params):
    """Pinot's null-aware aggregations: a group that aggregated no value finalizes to NULL,
    through merges and the Arrow codec; COUNT and DISTINCTCOUNT stay 0 (no wrapper)."""
    (fn,) = with_null_handling([make(name, *params)], True)
    groups = np.array([0, 0, 2])  # group 1 has no value
    state = fn.aggregate(ValueBlock(3, raw=np.array([1.0, 3.0, 5.0])), groups, 3)
    merged = fn.merge(fn.concat_states([state, fn.empty_state(3)]), np.tile(np.arange(3), 2), 3)
    decoded = fn.from_arrow(fn.to_arrow(merged))
    assert fn.finalize_nulls(decoded).tolist() == [False, True, False]
    if name != "varsamp":  # (one value has no sample variance: Pinot's sentinel)
        assert fn.finalize(decoded)[2] == brute(name, np.array([5.0]), params)
    assert fn.finalize_nulls(fn.merge_one([fn.empty_state(1), fn.empty_state(1)])).tolist() == [
        True
    ]
    (count,) = with_null_handling([make("count")], True)
    assert count.finalize_nulls(count.empty_state(1)) is None
    assert with_null_handling([fn], False)[0] is fn.plain


def _g1_g2(values: np.ndarray) -> tuple[float, float]:
    """The bias-corrected sample skewness (G1) and excess kurtosis (G2), from the textbook
    definitions (commons-math's, which Pinot's SKEWNESS and KURTOSIS return)."""
    n = len(values)
    d = values - values.mean()
    s2 = (d**2).sum() / (n - 1)
    g1 = n / ((n - 1) * (n - 2)) * (d**3).sum() / s2**1.5
    g2 = (n * (n + 1) / ((n - 1) * (n - 2) * (n - 3)) * (d**4).sum() / s2**2
          - 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))  # fmt: skip
    return g1, g2


def test_skewness_and_kurtosis_per_group_and_after_merge():
    expected = np.array([_g1_g2(VALUES[g == GROUP_OF]) for g in range(GROUPS)])
    for position, name in enumerate(("skewness", "kurtosis")):
        fn = make(name)
        whole = fn.finalize(fn.aggregate(ValueBlock(N, raw=VALUES), GROUP_OF, GROUPS))
        np.testing.assert_allclose(whole, expected[:, position], rtol=1e-9)
        merged = fn.finalize(_split_and_merge(fn, VALUES, GROUP_OF, GROUPS, parts=9))
        np.testing.assert_allclose(merged, expected[:, position], rtol=1e-9)


def test_skewness_and_kurtosis_of_few_or_equal_values():
    """Pinot's edges: too few values give NaN (under 3 for skewness, 4 for kurtosis), equal
    values 0.0; with null handling a group without values is NULL."""
    for name, too_few in (("skewness", 2), ("kurtosis", 3)):
        fn = make(name)
        few = fn.aggregate(ValueBlock(too_few, raw=np.arange(too_few, dtype=float)), None, 1)
        assert np.isnan(fn.finalize(few)[0])
        same = fn.aggregate(ValueBlock(6, raw=np.full(6, 1.323)), None, 1)
        assert fn.finalize(same)[0] == 0.0
        (aware,) = with_null_handling([fn], True)
        assert aware.finalize_nulls(aware.empty_state(1)).tolist() == [True]


def test_theta_sketches_count_distinct_values_and_merge_by_union():
    from engine.functions import lookup

    words = np.array([f"w{i % 300}" for i in range(3000)], dtype=object)
    groups = np.arange(3000) % 3
    count = make("distinctcountthetasketch")
    raw = make("distinct_count_raw_theta_sketch", "nominalEntries=4096")
    for fn in (count, raw):
        state = _split_and_merge(fn, words, groups, 3, parts=4)
        values = fn.finalize(state)
        if fn is raw:  # Pinot's sketch text, read by the scalar functions
            estimate = lookup("getThetaSketchEstimate").impl
            values = [estimate(v) for v in values]
            union = lookup("thetaSketchUnion").impl(*fn.finalize(state)[:2])
            assert estimate(union) == 200  # w0..w299 in groups 0 and 1: two of three
            diff = lookup("thetaSketchDiff").impl(fn.finalize(state)[0], fn.finalize(state)[0])
            assert estimate(diff) == 0
        assert list(values) == [100, 100, 100]  # exact below the nominal entries
    with pytest.raises(QueryValidationError, match="nominalEntries"):
        make("distinctcountthetasketch", "nominalEntries=x").aggregate(
            ValueBlock(1, raw=np.array([1])), None, 1
        )
    with pytest.raises(QueryValidationError, match="predicates"):
        make("distinctcountthetasketch", "", "x = 1").aggregate(
            ValueBlock(1, raw=np.array([1])), None, 1
        )


def test_tdigest_and_kll_percentiles_of_few_values_are_pinots():
    """Pinot's expected outputs (UDFAggregates.json) on seven values: its t-digest answers
    a singleton centroid's own value near it, and KLL takes the smallest value whose rank
    reaches p (INCLUSIVE)."""
    values = np.array([300, 400, 100, 1, 1.01, 1.5, 1.75])
    ints = np.array([2, 2, 3, 100, 101, 150, 175])
    cases = [("percentiletdigest", values, 50, 1.75), ("percentiletdigest", values, 5, 1.0),
             ("percentiletdigest", ints, 75, 150), ("percentilekll", values[2:6], 50, 1.01),
             ("percentilekll", ints[2:6], 75, 101), ("percentiletdigest", values[2:6], 50, 1.5)]  # fmt: skip
    for name, data, p, expected in cases:
        fn = make(name, p)
        assert fn.finalize(fn.aggregate(ValueBlock(len(data), raw=data), None, 1))[0] == expected
