"""Alert rules over a group's lag samples.

A rule is a group glob (`billing-*`), a condition and a duration:
- `status >= WARN` (or `>`, `==`; OK, WARN, ERR): the group's Burrow status;
- `lag > N` (or `>=`): the group's total lag over the partitions whose lag is known;
- `time lag > S` (seconds, or with a unit: `90s`, `5m`, `1h`): the largest partition time lag;
- `no progress for D`: some partition with lag kept the same committed offset for D.
It fires when its condition has held at every sample for at least the duration, and resolves
at the first sample where it no longer holds. Storage, scheduling and delivery live elsewhere;
this module only decides.
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitoring.errors import RuleError
from monitoring.evaluation.burrow import Status, group_status
from monitoring.evaluation.time_lag import EndOffsetTable
from monitoring.evaluation.window import Sample, WindowConfig, evaluate_samples
from monitoring.lag import monitored_lag

TopicPartition = tuple[str, int]
GroupSamples = Mapping[TopicPartition, Sequence[Sample]]

_OPS = {">": operator.gt, ">=": operator.ge, "==": operator.eq}
_UNITS_S = {"": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
            "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}  # fmt: skip
_DURATION = r"(\d+(?:\.\d+)?)\s*([a-z]*)"
_PATTERNS = [
    ("status", re.compile(r"status\s*(>=|>|==)\s*([a-z]+)")),
    ("time_lag", re.compile(rf"time\s*lag\s*(>=|>)\s*{_DURATION}")),
    ("lag", re.compile(r"lag\s*(>=|>)\s*(\d+)")),
    ("no_progress", re.compile(rf"no\s+progress\s+for\s+{_DURATION}")),
]


def parse_duration_s(text: str) -> float:
    """`90`, `90s`, `5m`, `2 minutes`, `1h` -> seconds."""
    match = re.fullmatch(_DURATION, text.strip().lower())
    if not match or match.group(2) not in _UNITS_S:
        raise RuleError(f"cannot read duration {text!r}: use a number with s, m or h")
    return float(match.group(1)) * _UNITS_S[match.group(2)]


@dataclass(frozen=True)
class Condition:
    kind: str  # status | lag | time_lag | no_progress
    op: str
    threshold: float

    @classmethod
    def parse(cls, text: str) -> Condition:
        lowered = text.strip().lower()
        for kind, pattern in _PATTERNS:
            match = pattern.fullmatch(lowered)
            if not match:
                continue
            if kind == "status":
                name = match.group(2).upper()
                if name not in ("OK", "WARN", "ERR"):
                    raise RuleError(f"unknown status {name!r} in {text!r}: use OK, WARN or ERR")
                return cls(kind, match.group(1), float(Status[name]))
            if kind == "lag":
                return cls(kind, match.group(1), float(match.group(2)))
            if kind == "time_lag":
                seconds = parse_duration_s(match.group(2) + match.group(3))
                return cls(kind, match.group(1), seconds)
            return cls(kind, ">=", parse_duration_s(match.group(1) + match.group(2)))
        raise RuleError(
            f"cannot read condition {text!r}: expected 'status >= WARN', 'lag > N', "
            "'time lag > S' or 'no progress for D'"
        )


@dataclass(frozen=True)
class AlertRule:
    name: str
    group_pattern: str
    condition: Condition
    duration_s: float = 0.0

    @classmethod
    def parse(cls, name: str, group_pattern: str, condition: str, duration: str | float = 0):
        if not group_pattern:
            raise RuleError(f"rule {name!r} needs a group or group pattern")
        seconds = parse_duration_s(str(duration)) if isinstance(duration, str) else duration
        if seconds < 0:
            raise RuleError(f"rule {name!r}: duration must not be negative")
        return cls(name, group_pattern, Condition.parse(condition), float(seconds))

    def matches(self, group: str) -> bool:
        return fnmatch.fnmatchcase(group, self.group_pattern)


@dataclass(frozen=True)
class Check:
    holds: bool
    value: float | None  # the measured value (status code, lag, seconds); None = unknown
    detail: str


@dataclass(frozen=True)
class AlertEvent:
    rule: str
    group: str
    state: str  # "firing" | "resolved"
    at_ms: int
    value: float | None
    detail: str


def check(condition: Condition, samples: GroupSamples, now_ms: int, config: WindowConfig) -> Check:
    """Whether the condition holds for the group as of `now_ms`."""
    if condition.kind == "status":
        statuses = [
            evaluate_samples(t, p, rows, now_ms, config) for (t, p), rows in samples.items()
        ]
        group = group_status("", [s for s in statuses if s is not None])
        holds = _OPS[condition.op](int(group.status), condition.threshold)
        return Check(holds, float(group.status), f"status {group.status.name}")
    if condition.kind == "lag":
        lags = [_lag_at(rows, now_ms) for rows in samples.values()]
        known = [lag for lag in lags if lag is not None]
        if not known:
            return Check(False, None, "lag unknown")
        total = sum(known)
        return Check(_OPS[condition.op](total, condition.threshold), total, f"lag {total}")
    if condition.kind == "time_lag":
        worst = _max_time_lag(samples, now_ms)
        if worst is None:
            return Check(False, None, "time lag unknown")
        holds = _OPS[condition.op](worst, condition.threshold)
        return Check(holds, worst, f"time lag {worst:.1f} s")
    stuck = [
        f"{t}/{p}" for (t, p), rows in sorted(samples.items())
        if _no_progress(rows, now_ms, condition.threshold * 1000)
    ]  # fmt: skip
    detail = f"no progress on {', '.join(stuck)}" if stuck else "progressing"
    return Check(bool(stuck), float(len(stuck)), detail)


def evaluate_rule(
    rule: AlertRule,
    group: str,
    samples: GroupSamples,
    now_ms: int,
    was_firing: bool,
    config: WindowConfig | None = None,
) -> AlertEvent | None:
    """The transition of `rule` for `group` at `now_ms`: "firing" when the condition has held
    at every sample of the last `duration_s` (inclusive) and the rule was not firing,
    "resolved" when it was firing and no longer holds, else None."""
    config = config or WindowConfig()
    current = check(rule.condition, samples, now_ms, config)
    if not current.holds:
        if was_firing:
            return AlertEvent(rule.name, group, "resolved", now_ms, current.value, current.detail)
        return None
    if was_firing or not _held_for(rule, samples, now_ms, config):
        return None
    return AlertEvent(rule.name, group, "firing", now_ms, current.value, current.detail)


def _held_for(rule: AlertRule, samples: GroupSamples, now_ms: int, config: WindowConfig) -> bool:
    since = now_ms - rule.duration_s * 1000
    instants = sorted({s.timestamp_ms for rows in samples.values() for s in rows})
    past = [t for t in instants if t < now_ms]
    if rule.duration_s and (not past or past[0] > since):
        return False  # the samples do not reach back the whole duration
    return all(check(rule.condition, samples, t, config).holds for t in past if t >= since)


def _latest(rows: Sequence[Sample], now_ms: int) -> Sample | None:
    seen = [s for s in rows if s.timestamp_ms <= now_ms]
    return max(seen, key=lambda s: s.timestamp_ms) if seen else None


def _lag_at(rows: Sequence[Sample], now_ms: int) -> int | None:
    latest = _latest(rows, now_ms)
    return monitored_lag(latest.committed, latest.end_offset) if latest else None


def _max_time_lag(samples: GroupSamples, now_ms: int) -> float | None:
    worst = None
    for rows in samples.values():
        table = EndOffsetTable()
        for s in sorted(rows, key=lambda s: s.timestamp_ms):
            if s.timestamp_ms <= now_ms and s.end_offset is not None:
                table.add(s.end_offset, s.timestamp_ms)
        latest = _latest(rows, now_ms)
        seconds = table.time_lag_s(latest.committed, now_ms) if latest else None
        if seconds is not None and (worst is None or seconds > worst):
            worst = seconds
    return worst


def _no_progress(rows: Sequence[Sample], now_ms: int, span_ms: float) -> bool:
    """The partition has lag now and its committed offset has not changed since a sample at
    least `span_ms` old (a partition with no lag is idle, not stuck)."""
    seen = sorted((s for s in rows if s.timestamp_ms <= now_ms), key=lambda s: s.timestamp_ms)
    if not seen or not _lag_at(seen, now_ms):
        return False
    current = seen[-1].committed
    for sample in reversed(seen):
        if sample.committed != current:
            return False
        if now_ms - sample.timestamp_ms >= span_ms:
            return True
    return False
