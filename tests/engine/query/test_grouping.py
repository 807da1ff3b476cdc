"""Dense group ids from key codes."""

from __future__ import annotations

import numpy as np

from engine.query.grouping import combine_codes


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
