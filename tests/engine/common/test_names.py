"""Segment and table names that become path components."""

from __future__ import annotations

import pytest

from engine.common.names import (
    InvalidNameError,
    check_segment_name,
    check_table_name,
    child_path,
)


@pytest.mark.parametrize("name", [
    "airlineStats_2014-01-01_2014-01-01_0", "githubEvents__0__12__20240101T0000Z",
    "merged_7days_1700000000000_0_t_1_2_0", "a b", "db.t_0",
])  # fmt: skip
def test_pinot_segment_names_pass(name):
    assert check_segment_name(name) == name


@pytest.mark.parametrize("name", [
    "", ".", "..", "a..b", "/tmp/victim", "../../etc", "a/b", "a\\b", "c:x", "a*", "a?",
    'a"', "a<b", "a>b", "a|b", "a\x00b", "a\nb", "x" * 256, None, 7,
])  # fmt: skip
def test_names_that_could_leave_a_folder_are_refused(name):
    with pytest.raises(InvalidNameError, match="invalid segment name"):
        check_segment_name(name)


def test_table_names_follow_pinots_rule_and_stay_one_component(tmp_path):
    for good in ("airlineStats", "airlineStats_OFFLINE", "db.table"):
        assert check_table_name(good) == good
    for bad in ("a/b", "..", ".x", "x.", "a.b.c", "a b", "a\\b", ""):
        with pytest.raises(InvalidNameError, match="invalid table name"):
            check_table_name(bad)
    assert child_path(tmp_path, "t_OFFLINE", "s") == tmp_path / "t_OFFLINE" / "s"
    with pytest.raises(InvalidNameError):
        child_path(tmp_path, "t_OFFLINE", "../../outside")
