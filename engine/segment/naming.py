"""Segment names as Pinot's simple segment name generator makes them."""

from __future__ import annotations

import re

from engine.common.errors import SegmentError
from engine.common.names import InvalidNameError, check_segment_name

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def simple_segment_name(
    table_name: str, min_time: object, max_time: object, sequence_id: int
) -> str:
    """``<table>_<minTime>_<maxTime>_<seq>``; without a time column ``<table>_<seq>``.
    A negative ``sequence_id`` leaves the suffix out, as in Pinot."""
    parts = [table_name]
    if min_time is not None and max_time is not None:
        parts += [_UNSAFE.sub("_", str(min_time)), _UNSAFE.sub("_", str(max_time))]
    if sequence_id >= 0:
        parts.append(str(sequence_id))
    return "_".join(parts)


def validate_segment_name(name: str) -> str:
    """``name`` if it can name a segment (``engine.common.names``); SegmentError otherwise."""
    try:
        return check_segment_name(name)
    except InvalidNameError as exc:
        raise SegmentError(str(exc)) from None
