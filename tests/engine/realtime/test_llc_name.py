"""LLC segment names: Pinot's format, parsing, ordering."""

from __future__ import annotations

import pytest

from engine.realtime.llc_name import LLCSegmentName, is_llc_segment

NOW_MS = 1_785_585_600_000  # 2026-08-01T12:00:00Z


def test_create_format_and_parse():
    name = LLCSegmentName.create("githubEvents_REALTIME", 3, 0, NOW_MS)
    assert str(name) == "githubEvents__3__0__20260801T1200Z"
    assert LLCSegmentName.parse(str(name)) == name
    assert name.creation_time_ms == NOW_MS
    following = name.next(NOW_MS + 90_000)
    assert str(following) == "githubEvents__3__1__20260801T1201Z"


@pytest.mark.parametrize(
    "text",
    [
        "airlineStats_16071_16071_0",
        "t__1__2",
        "t__1__2__3__20260801T1200Z",
        "t__x__2__20260801T1200Z",
        "t__1__2__2026-08-01",
        "__1__2__20260801T1200Z",
    ],
)
def test_other_names_are_not_llc(text):
    assert LLCSegmentName.parse(text) is None and not is_llc_segment(text)


def test_order_is_partition_then_sequence():
    names = ["t__1__0__20260801T1200Z", "t__0__10__20260801T1100Z", "t__0__2__20260801T1300Z"]
    ordered = sorted(LLCSegmentName.parse(n) for n in names)
    assert [str(n) for n in ordered] == [
        "t__0__2__20260801T1300Z",
        "t__0__10__20260801T1100Z",
        "t__1__0__20260801T1200Z",
    ]


def test_bad_parts_are_refused():
    with pytest.raises(ValueError, match="must not contain"):
        LLCSegmentName.create("a__b", 0, 0, NOW_MS)
    with pytest.raises(ValueError, match="negative"):
        LLCSegmentName.create("t", -1, 0, NOW_MS)
