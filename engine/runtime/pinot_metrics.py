"""Metrics under the Prometheus names Pinot's JMX exporter gives them, so dashboards and alerts
written for Pinot work unchanged (README, "Metrics"):

- a meter ``pinot_<component>_<name>_<Count|MeanRate|OneMinuteRate|FiveMinuteRate|
  FifteenMinuteRate>``: a count and Dropwizard's rates (exponentially weighted, ticked every
  5 s, per second);
- a timer: a meter's series plus ``_Min``, ``_Max``, ``_Mean``, ``_StdDev`` and
  ``_50thPercentile`` ... ``_999thPercentile`` in milliseconds, over its last 1028 values;
- a gauge ``pinot_<component>_<name>_Value``.

Labels are Pinot's: ``table`` (the raw name) and ``tableType`` when the metric is per table
type. A collector renders them from a process's ``PinotMetrics`` at scrape time; recording is a
lock and a few additions, cheap enough for every query.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

import numpy as np
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

_TICK_S = 5.0
_ALPHAS = {  # Dropwizard's EWMA weights for a 5 s tick
    "OneMinuteRate": 1 - math.exp(-_TICK_S / 60),
    "FiveMinuteRate": 1 - math.exp(-_TICK_S / 300),
    "FifteenMinuteRate": 1 - math.exp(-_TICK_S / 900),
}
_RESERVOIR = 1028
_PERCENTILES = (("50thPercentile", 50), ("75thPercentile", 75), ("95thPercentile", 95),
                ("98thPercentile", 98), ("99thPercentile", 99), ("999thPercentile", 99.9))  # fmt: skip


class Meter:
    """Dropwizard's meter: a count and exponentially weighted rates per second. Updated with
    its owner's lock held (``PinotMetrics.record``)."""

    def __init__(self) -> None:
        self.count = 0
        self._started = self._ticked = time.monotonic()
        self._uncounted = 0
        self._rates = dict.fromkeys(_ALPHAS, 0.0)
        self._initialized = False

    def mark(self, n: int, now: float) -> None:
        if now - self._ticked >= _TICK_S:
            self._tick(now)
        self.count += n
        self._uncounted += n

    def _tick(self, now: float) -> None:
        while now - self._ticked >= _TICK_S:
            instant = self._uncounted / _TICK_S
            self._uncounted = 0
            for name, alpha in _ALPHAS.items():
                rate = self._rates[name]
                self._rates[name] = (
                    instant if not self._initialized else rate + alpha * (instant - rate)
                )
            self._initialized = True
            self._ticked += _TICK_S

    def attributes(self) -> dict[str, float]:
        now = time.monotonic()
        self._tick(now)
        elapsed = now - self._started
        return {"Count": self.count, "MeanRate": self.count / elapsed if elapsed > 0 else 0.0,
                **self._rates}  # fmt: skip


class Timer(Meter):
    """A meter of durations with their statistics (milliseconds) over the last 1028."""

    def __init__(self) -> None:
        super().__init__()
        self._values: list[float] = []
        self._next = 0

    def update(self, ms: float, now: float) -> None:
        # ``mark(1, now)`` inlined: a broker updates six timers per query
        if now - self._ticked >= _TICK_S:
            self._tick(now)
        self.count += 1
        self._uncounted += 1
        if len(self._values) < _RESERVOIR:
            self._values.append(ms)
        else:
            self._values[self._next] = ms
            self._next = (self._next + 1) % _RESERVOIR

    def attributes(self) -> dict[str, float]:
        out = super().attributes()
        values = np.asarray(self._values, dtype=np.float64)
        if not len(values):
            return out | dict.fromkeys(
                ("Min", "Max", "Mean", "StdDev", *(p for p, _ in _PERCENTILES)), 0.0
            )
        out |= {"Min": float(values.min()), "Max": float(values.max()),
                "Mean": float(values.mean()), "StdDev": float(values.std())}  # fmt: skip
        for name, value in zip(
            _PERCENTILES, np.percentile(values, [p for _, p in _PERCENTILES]), strict=True
        ):
            out[name[0]] = float(value)
        return out


class PinotMetrics:
    """A process's meters and timers by (name, labels), ``labels`` a tuple of (name, value)
    pairs (Pinot exports one name with and without labels, e.g. a global and a per-partition
    count); gauges are read at scrape time from callbacks returning ``{labels: value}``."""

    def __init__(self, component: str) -> None:
        self.component = component  # broker, server, controller, minion
        self._meters: dict[tuple[str, tuple], Meter] = {}
        self._gauges: dict[str, Callable[[], dict[tuple, float]]] = {}
        self._declared: dict[str, str] = {}  # unlabelled metrics shown at 0: name -> kind
        self._lock = threading.Lock()

    def declare(self, kind: str, name: str) -> None:
        """An unlabelled ``meter`` or ``timer`` shown (at 0) before anything is recorded."""
        self._declared[name] = kind

    def mark(self, name: str, labels: tuple = (), n: int = 1) -> None:
        with self._lock:
            self._metric(Meter, name, labels).mark(n, time.monotonic())

    def meter(self, name: str, labels: tuple = ()) -> Meter:
        """The meter itself, for a caller that records it often (``record``)."""
        with self._lock:
            return self._metric(Meter, name, labels)

    def timer(self, name: str, labels: tuple = ()) -> Timer:
        with self._lock:
            return self._metric(Timer, name, labels)

    def record(self, timings: Iterable[tuple[Timer, float]], marks: Iterable[Meter] = ()) -> None:
        """Several timer values (ms) and meter marks under one lock and one clock read."""
        with self._lock:
            now = time.monotonic()
            for timer, ms in timings:
                timer.update(ms, now)
            for meter in marks:
                meter.mark(1, now)

    def gauge(self, name: str, read: Callable[[], dict[tuple, float]]) -> None:
        self._gauges[name] = read

    def _metric(self, kind: type, name: str, labels: tuple) -> Meter:
        metric = self._meters.get((name, labels))
        if metric is None:
            metric = self._meters[(name, labels)] = kind()
        return metric

    def collector(self) -> Collector:
        return _PinotCollector(self)

    def families(self) -> list[GaugeMetricFamily]:
        prefix = f"pinot_{self.component}_"
        with self._lock:
            series = [(name, labels, m.attributes()) for (name, labels), m in self._meters.items()]
        recorded = {name for name, labels, _ in series if not labels}
        for name, kind in self._declared.items():
            if name not in recorded:
                series.append((name, (), (Timer() if kind == "timer" else Meter()).attributes()))
        families: dict[str, GaugeMetricFamily] = {}

        def add(full: str, labels: tuple, value: float) -> None:
            family = families.get(full)
            if family is None:
                family = families[full] = GaugeMetricFamily(full, f"Pinot {self.component} metric")
            family.add_sample(full, dict(labels), value)

        for name, labels, attributes in sorted(series, key=lambda s: (s[0], s[1])):
            for attribute, value in attributes.items():
                add(f"{prefix}{name}_{attribute}", labels, value)
        for name, read in self._gauges.items():
            for labels, value in sorted(read().items()):
                add(f"{prefix}{name}_Value", labels, value)
        return list(families.values())


class _PinotCollector(Collector):
    def __init__(self, metrics: PinotMetrics) -> None:
        self._metrics = metrics

    def collect(self):
        yield from self._metrics.families()
