"""Query quotas at the broker, shared across brokers as Pinot shares them
(``HelixExternalViewBasedQueryQuotaManager``).

- A table's ``quota.maxQueriesPerSecond`` is divided among the live brokers that serve it: the
  brokers tagged with the table's broker tenant (``tenants.broker``) that have a live-instance
  node. The share is recomputed whenever the routing snapshot changes, i.e. as soon as a
  broker joins or leaves in ZooKeeper or the table config changes.
- An application's quota (the ``applicationName`` query option): ``PROPERTYSTORE/CONFIGS/
  CLUSTER/applicationQuotas`` (``POST /applicationQuotas/{app}`` on the controller), else the
  cluster config ``applicationMaxQueriesPerSecond``; divided among all live brokers.
- A query on a hybrid table's raw name takes a permit from both halves' limiters.
- The broker instance config ``queryRateLimitDisabled=true`` turns quotas off on that broker.

Each limiter is a token bucket that behaves like Guava's smooth-bursty ``RateLimiter`` that
Pinot uses: permits accrue at the rate, at most one second's worth is stored, and a new limiter
starts with one permit, so a quota over a window of T seconds serves about ``rate * T``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Iterable

QUERY_QUOTA_EXCEEDED_ERROR_CODE = 429  # Pinot's TOO_MANY_REQUESTS
APPLICATION_NAME_OPTION = "applicationName"
APPLICATION_DEFAULT_KEY = "applicationMaxQueriesPerSecond"
RATE_LIMIT_DISABLED_KEY = "queryRateLimitDisabled"


class RateLimiter:
    """A non-blocking token bucket: ``try_acquire`` takes a permit if one is there."""

    __slots__ = ("_lock", "_stamp", "_tokens", "rate")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = 1.0
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def set_rate(self, rate: float) -> None:
        with self._lock:
            self._refill(time.monotonic())
            self.rate = rate
            self._tokens = min(self._tokens, max(rate, 1.0))

    def try_acquire(self) -> bool:
        with self._lock:
            self._refill(time.monotonic())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def _refill(self, now: float) -> None:
        capacity = max(self.rate, 1.0)  # one second's worth, and at least one permit
        self._tokens = min(capacity, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now


@dataclasses.dataclass(frozen=True)
class QuotaInputs:
    """What the quotas depend on, read from ZooKeeper with each routing snapshot."""

    table_qps: dict[str, float]  # table with type -> its maxQueriesPerSecond
    table_broker_tags: dict[str, str]  # table with type -> its broker tenant's tag
    live_brokers: dict[str, frozenset[str]]  # live broker -> its tags
    application_qps: dict[str, float]
    default_application_qps: float | None
    disabled: bool = False  # this broker's queryRateLimitDisabled


class QueryQuotas:
    """The limiters of one broker, rebuilt by ``update`` and read lock-free by the checks."""

    def __init__(self) -> None:
        self._tables: dict[str, RateLimiter] = {}
        self._applications: dict[str, RateLimiter] = {}
        self._default_application: float | None = None
        self._num_brokers = 1
        self._lock = threading.Lock()  # serializes updates and default-application limiters

    @property
    def active(self) -> bool:
        """Whether any quota is set: without one no query needs its tables or options read
        to be admitted."""
        return bool(self._tables or self._applications or self._default_application is not None)

    def update(self, inputs: QuotaInputs) -> None:
        with self._lock:
            if inputs.disabled:
                self._tables, self._applications, self._default_application = {}, {}, None
                return
            tables = {}
            for table, qps in inputs.table_qps.items():
                tag = inputs.table_broker_tags.get(table)
                serving = sum(1 for tags in inputs.live_brokers.values() if tag in tags)
                tables[table] = _limiter(self._tables.get(table), qps / max(serving, 1))
            self._num_brokers = max(len(inputs.live_brokers), 1)
            applications = {
                app: _limiter(self._applications.get(app), qps / self._num_brokers)
                for app, qps in inputs.application_qps.items()
                if qps > 0
            }
            default = inputs.default_application_qps
            self._default_application = default if default and default > 0 else None
            if self._default_application is not None:  # keep the limiters of unnamed apps
                for app, limiter in self._applications.items():
                    if app not in inputs.application_qps:
                        applications[app] = _limiter(
                            limiter, self._default_application / self._num_brokers
                        )
            self._tables, self._applications = tables, applications

    def table_over_quota(self, tables: Iterable[str]) -> str | None:
        """The first of ``tables`` (with type) whose quota has no permit left, else None
        (each table with a quota gives up one permit, as Pinot's hybrid check does)."""
        limiters = self._tables
        if not limiters:
            return None
        for table in tables:
            limiter = limiters.get(table)
            if limiter is not None and not limiter.try_acquire():
                return table
        return None

    def application_over_quota(self, application: str | None) -> bool:
        if not application:
            return False
        limiter = self._applications.get(application)
        if limiter is None:
            if self._default_application is None:
                return False
            with self._lock:  # an application first seen gets the default quota
                limiter = self._applications.get(application)
                if limiter is None:
                    limiter = RateLimiter(self._default_application / self._num_brokers)
                    self._applications = {**self._applications, application: limiter}
        return not limiter.try_acquire()

    def table_rate(self, table: str) -> float | None:
        """This broker's share of ``table``'s quota, in queries per second."""
        limiter = self._tables.get(table)
        return limiter.rate if limiter is not None else None

    def application_rate(self, application: str) -> float | None:
        limiter = self._applications.get(application)
        return limiter.rate if limiter is not None else None


def quota_inputs(routes, brokers: dict[str, frozenset[str]], disabled: bool, cluster_config,
                 application_quotas) -> QuotaInputs:  # fmt: skip
    """``QuotaInputs`` from a routing snapshot's tables (``TableRoute.max_qps`` and
    ``broker_tag``), the live brokers' tags and the cluster config and application quota
    ZNRecords (None when absent)."""
    apps = {app: parse_qps(v) for app, v in
            (application_quotas.simple_fields if application_quotas else {}).items()}  # fmt: skip
    cluster = cluster_config.simple_fields if cluster_config else {}
    return QuotaInputs(
        table_qps={t: r.max_qps for t, r in routes.items() if r.max_qps is not None},
        table_broker_tags={t: r.broker_tag for t, r in routes.items()},
        live_brokers=brokers,
        application_qps={app: qps for app, qps in apps.items() if qps is not None},
        default_application_qps=parse_qps(cluster.get(APPLICATION_DEFAULT_KEY)),
        disabled=disabled,
    )


def _limiter(current: RateLimiter | None, rate: float) -> RateLimiter:
    if current is None:
        return RateLimiter(rate)
    if not math.isclose(current.rate, rate):
        current.set_rate(rate)
    return current


def parse_qps(value) -> float | None:
    """A quota value as Pinot reads it: a positive, finite number; else None (no quota)."""
    try:
        qps = float(value)
    except (TypeError, ValueError):
        return None
    return qps if qps > 0 and math.isfinite(qps) else None
