"""Burrow's partition rules with the cases of its caching evaluator tests (timestamps in ms,
"now" given in s there) and the rewind-recovery cases of ../shared/KAFKA_OFFSETS.md."""

import pytest

from monitoring.evaluation import burrow
from monitoring.evaluation.burrow import Commit, Status


def commits(*rows):
    """rows of (offset, timestamp ms, lag or None)."""
    return [Commit(offset, ts, lag) for offset, ts, lag in rows]


RISING = [(1000, 100_000), (2000, 200_000), (3000, 300_000), (4000, 400_000), (5000, 500_000)]
BURST = [792748079 + i for i in range(15)]
BURST_TIMES = [1512224618356, 1512224619362, 1512224620366, 1512224621367, 1512224622370,
               1512224623373, 1512224624378, 1512224625379, 1512224626383, 1512224627383,
               1512224628383, 1512224629388, 1512224630391, 1512224631394, 1512224632397]  # fmt: skip
BURST_COMMITS = commits(*[(o, t, 0) for o, t in zip(BURST, BURST_TIMES, strict=True)])

# window, broker offsets, current lag, now (s), the six rule results, status
CASES = [
    # 0: zero lag somewhere in the window
    (commits(*[(o, t, lag) for (o, t), lag in zip(RISING, [0, 50, 100, 150, 200], strict=True)]),
     [5200], 200, 600, (False, -1, False, False, True, False), Status.OK),
    # 1: 400 s since the last commit equals the window's span: not greater, so not stopped
    (commits(*[(o, t, lag) for (o, t), lag in zip(RISING, [0, 50, 100, 150, 200], strict=True)]),
     [5200], 200, 900, (False, -1, False, False, True, False), Status.OK),
    # 2: 500 s since the last commit: STOP even though the lag was zero at the start
    (commits(*[(o, t, lag) for (o, t), lag in zip(RISING, [0, 50, 100, 150, 200], strict=True)]),
     [5200], 200, 1000, (False, -1, True, False, True, False), Status.STOP),
    # 3: STOP with the lag never zero
    (commits(*[(o, t, lag) for (o, t), lag in zip(RISING, [50, 100, 150, 200, 250], strict=True)]),
     [5250], 250, 1000, (True, -1, True, False, True, False), Status.STOP),
    # 4: the same offset every time, but the lag was zero once: OK
    (commits(*[(1000, t, lag) for (_, t), lag in zip(RISING, [0, 50, 100, 150, 200], strict=True)]),
     [1200], 200, 600, (False, -1, False, True, True, False), Status.OK),
    # 5: the same offset with lag always: STALL
    (commits(*[(1000, t, lag) for (_, t), lag in zip(RISING, [100, 150, 200, 250, 300], strict=True)]),
     [1300], 300, 600, (True, -1, False, True, True, False), Status.STALL),
    # 6: STALL even when the lag stays the same
    (commits(*[(1000, t, 100) for _, t in RISING]),
     [1100], 100, 600, (True, -1, False, True, True, False), Status.STALL),
    # 7: a rewind (3000 -> 2000) that later reached 4000 is recovered, and the lag decreased
    (commits((1000, 100_000, 100), (2000, 200_000, 150), (3000, 300_000, 200),
             (2000, 400_000, 1250), (4000, 500_000, 300)),
     [4300], 300, 600, (True, 3, False, False, False, False), Status.OK),
    # 8: current lag 0: OK whatever the window says
    (commits(*[(o, t, lag) for (o, t), lag in zip(RISING, [50, 100, 150, 200, 250], strict=True)]),
     [5250], 0, 1000, (True, -1, True, False, True, False), Status.OK),
    # 9: stopped, and every recent end offset is past the last commit: STOP
    (BURST_COMMITS, [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650,
     (False, -1, True, False, True, False), Status.STOP),
    # 10: stopped by the timestamps, but a recent end offset equals the last commit: OK
    (BURST_COMMITS, [792748094, 792748093, 792748093, 792748093], 1, 1512224650,
     (False, -1, True, False, True, True), Status.OK),
    # 11: case 0 with commits whose lag is unknown in between: they change nothing
    (commits((1000, 100_000, 0), (1500, 150_000, None), (2000, 200_000, 50),
             (2500, 250_000, None), (3000, 300_000, 100), (3500, 350_000, None),
             (4000, 400_000, 150), (4500, 450_000, None), (5000, 500_000, 200),
             (5500, 550_000, None)),
     [5700], 200, 600, (False, -1, False, False, True, False), Status.OK),
]  # fmt: skip


@pytest.mark.parametrize(
    ("window", "brokers", "current", "now_s", "rules", "status"),
    CASES,
    ids=[str(i) for i in range(len(CASES))],
)
def test_burrow_caching_evaluator_cases(window, brokers, current, now_s, rules, status):
    always, rewind, stopped, stalled, not_decreasing, recent_zero = rules
    assert burrow.lag_always_above(window, 0) is always
    assert burrow.rewind_index(window) == rewind
    assert burrow.stopped(window, now_s * 1000) is stopped
    assert burrow.stalled(window) is stalled
    assert burrow.lag_not_decreasing(window) is not_decreasing
    assert burrow.recent_lag_zero(window, brokers) is recent_zero
    assert burrow.partition_status(window, brokers, current, now_s * 1000) == status


def test_a_rewind_that_has_not_reached_the_old_offset_again_is_rewind():
    window = commits((1000, 100_000, 100), (2000, 200_000, 150), (3000, 300_000, 200),
                     (2000, 400_000, 1250), (2500, 500_000, 300))  # fmt: skip
    assert not burrow.rewind_recovered(window, 3)
    assert burrow.partition_status(window, [2800], 300, 600_000) == Status.REWIND


def test_allowed_lag_tolerates_a_small_constant_lag():
    # Transaction markers keep a committing consumer one offset behind forever.
    window = commits(*[(o, t, 1) for o, t in RISING])
    assert burrow.partition_status(window, [5001], 1, 600_000) == Status.WARN
    assert burrow.partition_status(window, [5001], 1, 600_000, allowed_lag=1) == Status.OK


def test_partition_completeness_and_minimum_complete():
    window = [None] * 8 + commits((1000, 100_000, 50), (1000, 200_000, 100))
    status = burrow.evaluate_partition("t", 0, window, [1100], 100, 250_000)
    assert (status.status, status.complete) == (Status.STALL, 0.2)
    assert (status.start.offset, status.end.timestamp_ms) == (1000, 200_000)
    gated = burrow.evaluate_partition("t", 0, window, [1100], 100, 250_000, minimum_complete=0.5)
    assert gated.status == Status.OK


def test_group_status_is_the_worst_partition_with_stop_stall_rewind_as_err():
    stop = burrow.PartitionStatus("t", 0, Status.STOP, 0.5, 2921, None, None)
    warn = burrow.PartitionStatus("t", 1, Status.WARN, 1.0, 400, None, None)
    ok = burrow.PartitionStatus("u", 0, Status.OK, 1.0, 0, None, None)
    group = burrow.group_status("g", [warn, stop, ok])
    assert group.status == Status.ERR
    assert (group.totallag, group.partition_count, group.maxlag) == (3321, 3, stop)
    assert group.complete == pytest.approx(2 / 3)
    assert burrow.group_status("g", [warn, ok]).status == Status.WARN
    assert burrow.group_status("g", []).status == Status.OK
    assert burrow.group_status("g", []).complete == 0.0
    assert burrow.group_status("g", None).status == Status.NOTFOUND
