"""The broker's query log, Pinot's ``QueryLogger``: a line when a query arrives and one when it
is answered, with Pinot's fields in Pinot's order, rate-limited by Pinot's keys::

    pinot.broker.query.log.maxRatePerSecond=10000     # one token bucket for all lines
    pinot.broker.query.log.logBeforeProcessing=true   # the "SQL query for request" line
    pinot.broker.query.log.length=-1                  # cut the query text (unlimited: <= 0)
    pinot.broker.request.client.ip.logging=false      # clientIp= (unknown when off)

A query over the rate is still logged when it failed or was slow (partial result, or more
than 1 s), as Pinot does; the others are counted and reported once a second at most
(``N logs were dropped. (log max rate per second: R)``). The logger is Pinot's,
``org.apache.pinot.broker.querylog.QueryLogger``, so its lines can be routed apart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engine.runtime.properties import PinotProperties

log = logging.getLogger("org.apache.pinot.broker.querylog.QueryLogger")

MAX_RATE_KEY = "pinot.broker.query.log.maxRatePerSecond"
BEFORE_KEY = "pinot.broker.query.log.logBeforeProcessing"
LENGTH_KEY = "pinot.broker.query.log.length"
CLIENT_IP_KEY = "pinot.broker.request.client.ip.logging"
SLOW_QUERY_MS = 1000  # a query slower than this is logged whatever the rate


class RateLimiter:
    """A token bucket like Guava's RateLimiter (smooth bursty): ``rate`` permits a second,
    at most one second's worth stored. ``try_acquire`` never waits. (The ``limits``
    package's limiters cost 60 us a call here, a fifth of a query's broker CPU.)"""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = rate
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False


class QueryLogger:
    def __init__(self, properties: PinotProperties) -> None:
        self.max_rate = properties.get_float(MAX_RATE_KEY, 10000.0)
        self.log_before = properties.get_bool(BEFORE_KEY, True)
        self.length = properties.get_int(LENGTH_KEY, -1)
        self.client_ip = properties.get_bool(CLIENT_IP_KEY, False)
        self._limiter = RateLimiter(self.max_rate)
        self._dropped = 0
        self._dropped_reported_at = time.monotonic()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether the query log's lines go anywhere (its logger is at INFO or below)."""
        return log.isEnabledFor(logging.INFO)

    def received(self, request_id: int, sql: str) -> bool:
        """Log a query's arrival; whether it holds a token (then its answer is logged too)."""
        allowed = self._limiter.try_acquire()
        if allowed and self.log_before:
            log.info("SQL query for request %d: %s", request_id, sql)
        return allowed

    def answered(self, allowed: bool, line: Callable[[], str], response: dict) -> None:
        """Log the answer's line (``line()``, built only then) when the query held a token,
        or failed or was slow."""
        if (
            allowed
            or response.get("partialResult")
            or response.get("timeUsedMs", 0) > SLOW_QUERY_MS
        ):
            log.info("%s", line())
        else:
            self._count_dropped()

    def _count_dropped(self) -> None:
        with self._lock:
            self._dropped += 1
            now = time.monotonic()
            if now - self._dropped_reported_at < 1.0:
                return
            dropped, self._dropped, self._dropped_reported_at = self._dropped, 0, now
        log.warning("%d logs were dropped. (log max rate per second: %g)", dropped, self.max_rate)

    def line(
        self,
        response: dict,
        sql: str,
        table: str,
        servers: list,
        *,
        unavailable: int = 0,
        client_ip: str | None = None,
    ) -> str:
        """The completion line: Pinot's fields, comma-joined, the query last. ``servers`` are
        the scatter's ``ServerResponse``s (their serverStats)."""
        r = response.get
        stats = ";".join(
            f"{s.server.instance_id}={0},{s.elapsed_ms},{s.size},{s.deserialize_ms},{0}"
            for s in servers
        )
        query = sql if self.length <= 0 else sql[: self.length]
        segments = (
            f"{r('numSegmentsQueried', 0)}/{r('numSegmentsProcessed', 0)}/"
            f"{r('numSegmentsMatched', 0)}/{r('numConsumingSegmentsQueried', 0)}/"
            f"{r('numConsumingSegmentsProcessed', 0)}/{r('numConsumingSegmentsMatched', 0)}/"
            f"{unavailable}"
        )
        return ",".join((
            f"requestId={r('requestId', '')}",
            f"table={table}",
            "queryHash=",
            f"timeMs={r('timeUsedMs', 0)}",
            f"docs={r('numDocsScanned', 0)}/{r('totalDocs', 0)}",
            f"entries={r('numEntriesScannedInFilter', 0)}/{r('numEntriesScannedPostFilter', 0)}",
            "segments(queried/processed/matched/consumingQueried/consumingProcessed/"
            f"consumingMatched/unavailable):{segments}",
            f"consumingFreshnessTimeMs={r('minConsumingFreshnessTimeMs', 0)}",
            f"servers={r('numServersResponded', 0)}/{r('numServersQueried', 0)}",
            f"groupsTrimmed={str(bool(r('groupsTrimmed', False))).lower()}",
            f"groupLimitReached={str(bool(r('numGroupsLimitReached', False))).lower()}",
            f"groupWarningLimitReached={str(bool(r('numGroupsWarningLimitReached', False))).lower()}",
            f"brokerReduceTimeMs={r('brokerReduceTimeMs', 0)}",
            f"exceptions={len(r('exceptions') or ())}",
            "serverStats=(Server=SubmitDelayMs,ResponseDelayMs,ResponseSize,"
            f"DeserializationTimeMs,RequestSentDelayMs);{stats}",
            "offlineThreadCpuTimeNs(total/thread/sysActivity/resSer):0/0/0/0",
            "realtimeThreadCpuTimeNs(total/thread/sysActivity/resSer):0/0/0/0",
            f"clientIp={(client_ip or 'unknown') if self.client_ip else 'unknown'}",
            "queryEngine=singleStage",
            "offlineMemAllocatedBytes(total/thread/resSer):0/0/0",
            "realtimeMemAllocatedBytes(total/thread/resSer):0/0/0",
            "pools=",
            "rlsFiltersApplied=false",
            "workloadName=",
            f"query={query}",
        ))  # fmt: skip
