"""Query quotas at one broker (engine.broker.quotas): the token bucket and how the cluster-wide
quotas are shared among the live brokers that serve a table."""

from __future__ import annotations

import time

from engine.broker.quotas import QueryQuotas, QuotaInputs, RateLimiter, parse_qps

TAG = "DefaultTenant_BROKER"


def inputs(brokers: int, **extra) -> QuotaInputs:
    fields = dict(
        table_qps={"t_OFFLINE": 100.0, "t_REALTIME": 40.0},
        table_broker_tags={"t_OFFLINE": TAG, "t_REALTIME": TAG, "u_OFFLINE": "other_BROKER"},
        live_brokers={f"Broker_h_{i}": frozenset({TAG}) for i in range(brokers)}
        | {"Broker_other_1": frozenset({"other_BROKER"})},
        application_qps={"app": 30.0},
        default_application_qps=None,
    )  # fmt: skip
    return QuotaInputs(**(fields | extra))


def test_limiter_serves_its_rate_with_at_most_one_second_stored():
    limiter = RateLimiter(50.0)
    assert limiter.try_acquire() and not limiter.try_acquire()  # starts with one permit
    time.sleep(2.0)  # two seconds idle store one second's worth, no more
    burst = sum(limiter.try_acquire() for _ in range(200))
    assert 49 <= burst <= 51
    started, served = time.monotonic(), 0
    while time.monotonic() - started < 1.0:
        served += limiter.try_acquire()
    assert 45 <= served <= 55


def test_quota_split_among_live_brokers_of_the_tenant_and_recomputed():
    quotas = QueryQuotas()
    quotas.update(inputs(2))
    assert quotas.table_rate("t_OFFLINE") == 50.0 and quotas.table_rate("t_REALTIME") == 20.0
    assert quotas.application_rate("app") == 10.0  # over all three live brokers
    limiter = quotas._tables["t_OFFLINE"]
    quotas.update(inputs(4))  # two more brokers join: the same limiter at a new rate
    assert quotas.table_rate("t_OFFLINE") == 25.0 and quotas._tables["t_OFFLINE"] is limiter
    quotas.update(inputs(0))  # every broker of the tenant gone: the whole quota, never /0
    assert quotas.table_rate("t_OFFLINE") == 100.0
    quotas.update(inputs(1, disabled=True))  # queryRateLimitDisabled on this broker
    assert quotas.table_rate("t_OFFLINE") is None and quotas.table_over_quota(["t_OFFLINE"]) is None


def test_hybrid_query_takes_a_permit_from_both_halves_and_apps_get_the_default():
    quotas = QueryQuotas()
    quotas.update(inputs(1, table_qps={"t_OFFLINE": 100.0, "t_REALTIME": 1.0},
                         default_application_qps=2.0))  # fmt: skip
    assert quotas.table_over_quota(["t_OFFLINE", "t_REALTIME"]) is None
    time.sleep(0.05)  # 5 permits for the OFFLINE half, a twentieth for the REALTIME one
    assert quotas.table_over_quota(["t_OFFLINE", "t_REALTIME"]) == "t_REALTIME"
    assert quotas.table_over_quota(["u_OFFLINE"]) is None  # no quota
    assert not quotas.application_over_quota(None)
    assert not quotas.application_over_quota("app")  # its own 30/2 = 15
    assert quotas.application_rate("new") is None
    assert not quotas.application_over_quota("new")  # unknown: the default, 2/2 brokers
    assert quotas.application_rate("new") == 1.0
    assert quotas.application_over_quota("new")


def test_parse_qps_as_pinot():
    assert parse_qps("100") == 100.0 and parse_qps(12.5) == 12.5
    assert parse_qps("0") is None and parse_qps("-1") is None
    assert parse_qps("inf") is None and parse_qps("x") is None and parse_qps(None) is None


def test_active_only_while_some_quota_is_set():
    """The broker skips reading a query's tables and options when no quota is active."""
    quotas = QueryQuotas()
    assert not quotas.active
    quotas.update(inputs(1))
    assert quotas.active
    none = dict(table_qps={}, application_qps={}, default_application_qps=None)
    quotas.update(inputs(1, **none))
    assert not quotas.active
    quotas.update(inputs(1, **(none | {"default_application_qps": 5.0})))
    assert quotas.active  # an application's default quota needs its name read
    quotas.update(inputs(1, disabled=True))
    assert not quotas.active
