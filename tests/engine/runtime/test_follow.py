"""The follow loop every engine process uses: a pass at start, on every poke and at the
interval; a failed pass retried with a doubling delay; stop ends it promptly."""

from __future__ import annotations

import threading
import time

import pytest

from engine.clusterstate import ZooKeeperUnavailableError
from engine.runtime import FollowLoop


class Recorder(FollowLoop):
    def __init__(self, outcomes=(), **kwargs):
        super().__init__("test-loop", **kwargs)
        self.outcomes = list(outcomes)  # exceptions to raise, in order; then passes succeed
        self.calls: list[float] = []
        self.called = threading.Event()

    def run_once(self):
        self.calls.append(time.monotonic())
        self.called.set()
        if self.outcomes:
            raise self.outcomes.pop(0)


def wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_first_pass_runs_at_start_then_on_every_poke():
    loop = Recorder(interval_s=60)
    loop.start()
    try:
        wait_for(lambda: loop.passes == 1)
        assert loop.ready.is_set()
        loop.poke()
        wait_for(lambda: loop.passes == 2)
        loop.poke(object())  # a kazoo watch passes its event
        wait_for(lambda: loop.passes == 3)
    finally:
        loop.stop()
    assert len(loop.calls) == 3


def test_a_pass_runs_at_the_interval_without_pokes():
    loop = Recorder(interval_s=0.05)
    loop.start()
    try:
        wait_for(lambda: loop.passes >= 4)
    finally:
        loop.stop()


def test_failures_are_retried_with_a_doubling_delay_and_reset_after_success():
    failures = [ZooKeeperUnavailableError("down")] * 3 + [RuntimeError("a bug")]
    loop = Recorder(failures, interval_s=60, backoff_s=0.05, max_backoff_s=0.15)
    loop.start()
    try:
        wait_for(lambda: loop.passes == 1)
    finally:
        loop.stop()
    gaps = [b - a for a, b in zip(loop.calls, loop.calls[1:], strict=False)]
    # 0.05, 0.10, then capped at 0.15 twice (the bug is retried the same way)
    for gap, expected in zip(gaps, [0.05, 0.10, 0.15, 0.15], strict=True):
        assert expected * 0.9 <= gap < expected + 0.5
    assert loop.failures == 0 and loop.ready.is_set()


def test_stop_ends_a_loop_waiting_out_a_long_backoff():
    loop = Recorder(
        [ZooKeeperUnavailableError("down")], interval_s=60, backoff_s=30, max_backoff_s=30
    )
    loop.start()
    loop.called.wait(5)
    started = time.monotonic()
    loop.stop()
    assert time.monotonic() - started < 2
    assert loop.passes == 0 and not loop.ready.is_set()


def test_a_shared_wake_event_pokes_the_loop():
    wake = threading.Event()
    loop = Recorder(wake=wake, interval_s=60)
    loop.start()
    try:
        wait_for(lambda: loop.passes == 1)
        wake.set()  # e.g. a participant's connection-state change
        wait_for(lambda: loop.passes == 2)
    finally:
        loop.stop()


@pytest.mark.parametrize(
    "kwargs", [{"interval_s": 0}, {"backoff_s": 0}, {"backoff_s": 2, "max_backoff_s": 1}]
)
def test_nonsense_timings_are_refused_with_the_loop_named(kwargs):
    with pytest.raises(ValueError, match="test-loop"):
        Recorder(**kwargs)
