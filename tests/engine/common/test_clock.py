"""now_ms, the one wall clock: whole epoch milliseconds between two float readings. One copy
(the consumer's time limit) used to work in fractional milliseconds; every caller now gets
an int."""

from __future__ import annotations

import time

from engine.common.clock import now_ms


def test_now_ms_is_whole_epoch_milliseconds():
    before = time.time() * 1000
    now = now_ms()
    after = time.time() * 1000
    assert type(now) is int
    assert int(before) - 1 <= now <= after + 1
