"""Instance selection (Pinot's ``balanced`` and replica-group selectors) and server health.

Balanced: each segment goes to one serving replica; the choice rotates with the request id
and the segment's position, so consecutive queries and neighbouring segments land on
different servers. Replica group (``replicaGroup``, ``strictReplicaGroup``,
``multiStageReplicaGroup``): the whole query goes to one replica group, chosen by the request
id, which keeps a query's fan-out to one group's servers. The controller builds replica groups
as contiguous runs of sorted server ids (``cluster.logic.instance_partitions``), so the i-th
of a segment's sorted replicas is in replica group i.

Either way, replicas that are not live, or that failed recently, are avoided while another
replica exists; a failed server is probed on its health endpoint and used again as soon as it
answers.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time

import urllib3

from engine.broker.routes import RoutingSnapshot, TableRoute
from engine.realtime.llc_name import LLCSegmentName

log = logging.getLogger(__name__)


class ServerHealth:
    """Servers that failed a request (connection refused, reset, timeout) are unhealthy
    until their health endpoint answers 200 again."""

    def __init__(self, http: urllib3.PoolManager, probe_interval_s: float = 0.5) -> None:
        self._http = http
        self.probe_interval_s = probe_interval_s
        self._unhealthy: dict[str, float] = {}  # instance -> when it failed (monotonic)
        self._urls: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="server-health", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def mark_failed(self, instance_id: str, health_url: str) -> None:
        with self._lock:
            if instance_id not in self._unhealthy:
                log.warning("server %s failed; avoiding it until it is healthy", instance_id)
            self._unhealthy[instance_id] = time.monotonic()
            self._urls[instance_id] = health_url

    def is_healthy(self, instance_id: str) -> bool:
        return instance_id not in self._unhealthy

    def unhealthy(self) -> list[str]:
        return sorted(self._unhealthy)

    def _run(self) -> None:
        while not self._stop.wait(self.probe_interval_s):
            with self._lock:
                pending = dict(self._urls)
            for instance_id, url in pending.items():
                if self._probe(url):
                    with self._lock:
                        self._unhealthy.pop(instance_id, None)
                        self._urls.pop(instance_id, None)
                    log.info("server %s is healthy again", instance_id)

    def _probe(self, url: str) -> bool:
        try:
            response = self._http.request(
                "GET", url, timeout=urllib3.Timeout(connect=0.5, read=1.0), retries=False
            )
            return response.status == 200
        except urllib3.exceptions.HTTPError:
            return False


REPLICA_GROUP_SELECTORS = frozenset(
    {"replicagroup", "strictreplicagroup", "multistagereplicagroup"}
)
# Pinot's StrictReplicaGroupInstanceSelector: every segment of a partition from the same
# server, which upsert and dedup tables need (each server's valid docs are its own)
STRICT_SELECTORS = frozenset({"strictreplicagroup", "multistagereplicagroup"})
_COMPACTED = re.compile(r"^compacted__.+?__(\d+)__")


class BalancedSelector:
    def __init__(self, health: ServerHealth) -> None:
        self.health = health
        self._counter = itertools.count()

    def next_request_id(self) -> int:
        return next(self._counter)

    def select(
        self,
        route: TableRoute,
        segments: list[str],
        snapshot: RoutingSnapshot,
        request_id: int,
    ) -> tuple[dict[str, list[str]], list[str]]:
        """(server -> its segments, segments with no serving replica)."""
        selector = route.instance_selector.lower()
        if selector in STRICT_SELECTORS:
            return self._select_strict(route, segments, snapshot, request_id)
        if selector in REPLICA_GROUP_SELECTORS:
            return self._select_replica_group(route, segments, snapshot, request_id)
        assignment: dict[str, list[str]] = {}
        unavailable: list[str] = []
        for position, segment in enumerate(segments):
            replicas = [
                r for r in route.segment_servers.get(segment, ())
                if r in snapshot.live and r in snapshot.servers
            ]  # fmt: skip
            if not replicas:
                unavailable.append(segment)
                continue
            healthy = [r for r in replicas if self.health.is_healthy(r)] or replicas
            chosen = healthy[(request_id + position) % len(healthy)]
            assignment.setdefault(chosen, []).append(segment)
        return assignment, unavailable

    def _select_replica_group(
        self, route: TableRoute, segments: list[str], snapshot: RoutingSnapshot, request_id: int
    ) -> tuple[dict[str, list[str]], list[str]]:
        """Every segment to its replica in one replica group (``request_id`` modulo their
        number); a segment whose replica there is down or failing goes to the next group's."""
        assignment: dict[str, list[str]] = {}
        unavailable: list[str] = []
        groups = max((len(route.segment_servers.get(s, ())) for s in segments), default=1) or 1
        group = request_id % groups
        for segment in segments:
            replicas = sorted(route.segment_servers.get(segment, ()))
            usable = [r for r in replicas if r in snapshot.live and r in snapshot.servers]
            if not usable:
                unavailable.append(segment)
                continue
            healthy = [r for r in usable if self.health.is_healthy(r)] or usable
            order = replicas[group % len(replicas) :] + replicas[: group % len(replicas)]
            chosen = next(r for r in order if r in healthy)
            assignment.setdefault(chosen, []).append(segment)
        return assignment, unavailable

    def _select_strict(
        self, route: TableRoute, segments: list[str], snapshot: RoutingSnapshot, request_id: int
    ) -> tuple[dict[str, list[str]], list[str]]:
        """Each partition's segments (a stream partition; for other names, the segments with
        the same replicas) all to one server that serves every one of them, in the replica
        group ``request_id`` picks when it can. When no usable server serves them all, the
        one serving the most takes those and the rest are reported unavailable: mixing
        replicas could count an upserted key twice or not at all."""
        assignment: dict[str, list[str]] = {}
        unavailable: list[str] = []
        groups = max((len(route.segment_servers.get(s, ())) for s in segments), default=1) or 1
        group = request_id % groups
        by_partition: dict[object, list[str]] = {}
        for segment in segments:
            by_partition.setdefault(_partition_key(route, segment), []).append(segment)
        for members in by_partition.values():
            replicas = [
                {r for r in route.segment_servers.get(s, ())
                 if r in snapshot.live and r in snapshot.servers}
                for s in members
            ]  # fmt: skip
            known = sorted(set().union(*replicas))
            if not known:
                unavailable.extend(members)
                continue
            order = known[group % len(known) :] + known[: group % len(known)]
            order.sort(key=lambda r: not self.health.is_healthy(r))  # healthy first, stable
            chosen = max(order, key=lambda r: sum(r in rs for rs in replicas))
            for segment, serving in zip(members, replicas, strict=True):
                if chosen in serving:
                    assignment.setdefault(chosen, []).append(segment)
                else:
                    unavailable.append(segment)
        return assignment, unavailable


def _partition_key(route: TableRoute, segment: str):
    llc = LLCSegmentName.parse(segment)
    if llc is not None:
        return ("partition", llc.partition)
    found = _COMPACTED.match(segment)
    if found:
        return ("partition", int(found.group(1)))
    return ("replicas", tuple(sorted(route.segment_servers.get(segment, ()))))
