"""Alert rules: parsing with clear errors, and firing/resolving over a group's samples."""

import pytest

from monitoring.errors import RuleError
from monitoring.evaluation.alerts import (
    AlertRule,
    Condition,
    check,
    evaluate_rule,
    parse_duration_s,
)
from monitoring.evaluation.burrow import Status
from monitoring.evaluation.window import Sample, WindowConfig

S = 1000


def series(rows, every_s=10):
    return [Sample(i * every_s * S, c, e) for i, (c, e) in enumerate(rows)]


def test_conditions_and_durations_parse():
    assert Condition.parse("status >= WARN") == Condition("status", ">=", float(Status.WARN))
    assert Condition.parse("Lag > 1000") == Condition("lag", ">", 1000.0)
    assert Condition.parse("time lag > 30") == Condition("time_lag", ">", 30.0)
    assert Condition.parse("time lag >= 5m") == Condition("time_lag", ">=", 300.0)
    assert Condition.parse("no progress for 2 minutes") == Condition("no_progress", ">=", 120.0)
    assert parse_duration_s("1h") == 3600 and parse_duration_s("90") == 90
    rule = AlertRule.parse("slow", "billing-*", "lag > 10", "2m")
    assert rule.duration_s == 120 and rule.matches("billing-eu") and not rule.matches("audit")


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("lag < 5", "cannot read condition 'lag < 5'"),
        ("status >= PANIC", "unknown status 'PANIC'"),
        ("no progress for 2 fortnights", "cannot read duration '2fortnights'"),
    ],
)
def test_bad_conditions_are_named(condition, message):
    with pytest.raises(RuleError, match=message):
        Condition.parse(condition)


def test_a_rule_needs_a_group_and_a_sane_duration():
    with pytest.raises(RuleError, match="needs a group"):
        AlertRule.parse("r", "", "lag > 1")
    with pytest.raises(RuleError, match="must not be negative"):
        AlertRule.parse("r", "g", "lag > 1", -5)


def test_lag_rule_fires_after_its_duration_and_resolves():
    rule = AlertRule.parse("behind", "g", "lag > 100", "20s")
    rows = [(0, 50), (0, 150), (0, 250), (0, 350), (400, 400)]
    samples = {("t", 0): series(rows)}
    assert evaluate_rule(rule, "g", samples, 10 * S, was_firing=False) is None  # held 0 s
    assert evaluate_rule(rule, "g", samples, 20 * S, was_firing=False) is None  # held 10 s
    fired = evaluate_rule(rule, "g", samples, 30 * S, was_firing=False)
    assert (fired.state, fired.value, fired.detail) == ("firing", 350, "lag 350")
    assert evaluate_rule(rule, "g", samples, 30 * S, was_firing=True) is None  # already firing
    resolved = evaluate_rule(rule, "g", samples, 40 * S, was_firing=True)
    assert (resolved.state, resolved.value) == ("resolved", 0)


def test_lag_sums_only_known_partitions_and_unknown_alone_never_fires():
    rule = AlertRule.parse("behind", "g", "lag > 10")
    samples = {("t", 0): series([(5, 30)]), ("t", 1): series([(None, 900)])}
    event = evaluate_rule(rule, "g", samples, 0, was_firing=False)
    assert event.value == 25
    only_unknown = {("t", 1): series([(None, 900)])}
    assert check(rule.condition, only_unknown, 0, WindowConfig()).detail == "lag unknown"
    assert evaluate_rule(rule, "g", only_unknown, 0, was_firing=False) is None


def test_no_progress_fires_for_a_partition_with_lag_stuck_for_the_span():
    rule = AlertRule.parse("stuck", "g", "no progress for 30s")
    stuck = series([(100, 100), (100, 150), (100, 200), (100, 250), (100, 300)])
    idle = series([(100, 100)] * 5)  # no lag: idle, not stuck
    samples = {("t", 0): stuck, ("t", 1): idle}
    assert evaluate_rule(rule, "g", samples, 20 * S, was_firing=False) is None
    event = evaluate_rule(rule, "g", samples, 40 * S, was_firing=False)
    assert (event.state, event.detail) == ("firing", "no progress on t/0")


def test_status_rule_uses_the_burrow_group_status():
    rule = AlertRule.parse("bad", "g", "status >= ERR")
    rewound = series([(1000, 1010), (2000, 2050), (3000, 3100), (500, 3200), (700, 3300)])
    event = evaluate_rule(rule, "g", {("t", 0): rewound}, 40 * S, False, WindowConfig(intervals=5))
    assert (event.state, event.detail) == ("firing", "status ERR")


def test_time_lag_rule_interpolates_end_offsets():
    rule = AlertRule.parse("late", "g", "time lag > 15s")
    # The log grows 100 per 10 s; the consumer sits at 100, which was the end at 10 s.
    samples = {("t", 0): series([(100, 0), (100, 100), (100, 200), (100, 300)])}
    event = evaluate_rule(rule, "g", samples, 30 * S, was_firing=False)
    assert event.state == "firing"
    assert event.value == pytest.approx(20.0)
