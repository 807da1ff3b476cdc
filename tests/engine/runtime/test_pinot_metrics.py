"""Pinot-named metrics: the exporter's series names and attributes, Dropwizard's rates and a
timer's statistics, labelled and global series of one name side by side."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from engine.runtime import pinot_metrics
from engine.runtime.pinot_metrics import PinotMetrics


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(pinot_metrics.time, "monotonic", lambda: now[0])
    return now


def _samples(metrics: PinotMetrics) -> dict[tuple, float]:
    registry = CollectorRegistry()
    registry.register(metrics.collector())
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_meter_count_and_rates(clock):
    metrics = PinotMetrics("broker")
    metrics.declare("meter", "queriesGlobal")
    assert _samples(metrics)[("pinot_broker_queriesGlobal_Count", ())] == 0
    for _ in range(50):
        metrics.mark("queriesGlobal")
        metrics.mark("queries", (("table", "t"),))
    clock[0] += 5.0  # one tick: 50 marks in 5 s
    samples = _samples(metrics)
    assert samples[("pinot_broker_queriesGlobal_Count", ())] == 50
    assert samples[("pinot_broker_queries_Count", (("table", "t"),))] == 50
    assert samples[("pinot_broker_queriesGlobal_OneMinuteRate", ())] == pytest.approx(10.0)
    assert samples[("pinot_broker_queriesGlobal_MeanRate", ())] == pytest.approx(10.0)
    clock[0] += 60.0  # a minute without a mark: the one-minute rate decays by e^-1
    samples = _samples(metrics)
    assert samples[("pinot_broker_queriesGlobal_OneMinuteRate", ())] == pytest.approx(10 / math.e)
    assert samples[("pinot_broker_queriesGlobal_FifteenMinuteRate", ())] > 9.0


def test_timer_statistics_and_global_beside_labelled(clock):
    metrics = PinotMetrics("broker")
    reduce = metrics.timer("reduce", (("table", "t"),))
    metrics.record([(reduce, float(ms)) for ms in range(1, 101)])
    metrics.record([(metrics.timer("queryTotalTimeMs"), 7.0)], [metrics.meter("queriesGlobal")])
    metrics.gauge("documentCount", lambda: {(("table", "t"), ("tableType", "OFFLINE")): 42})
    samples = _samples(metrics)
    labels = (("table", "t"),)
    assert samples[("pinot_broker_reduce_Count", labels)] == 100
    assert samples[("pinot_broker_reduce_Min", labels)] == 1
    assert samples[("pinot_broker_reduce_Max", labels)] == 100
    assert samples[("pinot_broker_reduce_Mean", labels)] == pytest.approx(50.5)
    assert samples[("pinot_broker_reduce_50thPercentile", labels)] == pytest.approx(50.5)
    assert samples[("pinot_broker_reduce_99thPercentile", labels)] == pytest.approx(99.01)
    assert samples[("pinot_broker_queryTotalTimeMs_999thPercentile", ())] == 7.0
    assert samples[("pinot_broker_documentCount_Value",
                    (("table", "t"), ("tableType", "OFFLINE")))] == 42  # fmt: skip
    # the last 1028 values only
    metrics.record([(reduce, 500.0)] * 1028)
    assert _samples(metrics)[("pinot_broker_reduce_Min", labels)] == 500
