"""Unit tests (no broker) of stall detection's rules, on a hand-moved clock: a partition is
stalled only after stall_ms without progress while upstream is past the consumer's position;
an idle partition, or one whose last offsets are transaction markers (the client's position is
past them), is not; upstream unknown gives no verdict; the warning comes once per stall."""

import logging

import pytest

from engine.common.errors import ConfigError
from engine.realtime.stall import STALL_ENV, StallWatch, stall_seconds_from_env


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_stall_rules_and_one_warning_per_stall(caplog):
    clock = Clock()
    watch = StallWatch("seg", stall_ms=30_000, check_ms=5_000, clock=clock)
    clock.now += 4
    assert not watch.due()  # checks at most every 5 s
    clock.now += 2
    assert not watch.due()  # checked, but 6 s without progress is not 30
    clock.now += 30
    assert watch.due()
    assert not watch.stalls_at(position=50, upstream=50)  # idle: caught up
    assert not watch.stalls_at(position=50, upstream=None)  # Kafka did not answer
    clock.now += 31
    assert watch.due()
    assert not watch.stalls_at(position=50, upstream=None)
    with caplog.at_level(logging.WARNING, logger="engine.realtime.stall"):
        # detected: marked, logged and counted; the client gets one more check to recover
        assert not watch.stalls_at(position=50, upstream=60)
        assert watch.stalled and watch.stalls == 1
        clock.now += 5
        assert watch.due() and watch.stalls_at(position=50, upstream=60)  # still stuck
        watch.recreated()
        clock.now += 2
        assert not watch.stalls_at(position=50, upstream=61)  # the new one gets a check
        clock.now += 3
        assert watch.due() and watch.stalls_at(position=50, upstream=61)
        watch.recreated()
    assert len(caplog.records) == 1 and "stalled, no progress" in caplog.text
    assert (watch.stalls, watch.recoveries) == (1, 2)
    watch.progressed()
    assert not watch.stalled and watch.stalled_since_ms is None
    clock.now += 31
    assert watch.due() and not watch.stalls_at(position=70, upstream=80)
    assert watch.stalls == 2 and watch.stalled  # a new stall is counted (and logged) again


def test_the_threshold_is_read_from_the_environment():
    assert stall_seconds_from_env({}) == 30.0
    assert stall_seconds_from_env({STALL_ENV: "2.5"}) == 2.5
    for bad in ("soon", "0", "-1", "nan"):
        with pytest.raises(ConfigError, match=STALL_ENV):
            stall_seconds_from_env({STALL_ENV: bad})
