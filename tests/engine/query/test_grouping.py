"""Dense group ids from key codes."""

from __future__ import annotations

import numpy as np

from engine.query.grouping import combine_codes, encode_values


def test_all_present_codes_skip_the_presence_pass_with_the_same_groups():
    codes = np.random.default_rng(5).integers(0, 300, 20_000).astype(np.uint32)
    codes[:300] = np.arange(300)  # every code occurs, as a whole segment's dictionary ids do
    checked = combine_codes([codes], [300])
    trusted = combine_codes([codes], [300], all_present=True)
    np.testing.assert_array_equal(checked[0], trusted[0])
    np.testing.assert_array_equal(checked[1], trusted[1])
    assert trusted[0].dtype == np.intp


def test_codes_not_in_use_are_dropped_without_the_flag():
    inverse, keys = combine_codes([np.array([4, 1, 4, 7])], [10])
    assert keys.tolist() == [1, 4, 7] and inverse.tolist() == [1, 0, 1, 2]


def test_time_buckets_encode_by_their_step_and_anything_else_still_decodes():
    day = 86_400_000
    buckets = 1_700_006_400_000 + np.random.default_rng(1).integers(0, 30, 200_000) * day
    codes, distinct = encode_values(buckets)
    np.testing.assert_array_equal(distinct[codes], buckets)
    assert np.all(np.diff(distinct) == day)  # the step path, not a sort
    off_grid = buckets.copy()
    off_grid[-1] += 1  # one value off the grid (past the sample): the exact check catches it
    codes, distinct = encode_values(off_grid)
    np.testing.assert_array_equal(distinct[codes], off_grid)
