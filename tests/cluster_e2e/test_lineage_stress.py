"""Segment lineage under stress: fast replacement cycles on real processes (a controller, two
servers, two brokers) while both brokers are queried in tight loops.

Segments A and B (two airline days) are replaced by C (their rows merged) over and over,
always under the same name C, the way a retried MergeRollup subtask reuses its outputs' names:

- start, upload C, end, revert (C stays, hidden by the reverted entry);
- start (reclaiming C from the reverted entry), upload C (a refresh when it is there), start
  again with forceCleanup as a retried subtask does (the first entry REVERTED while C is
  ONLINE, the name moving to the new entry), upload C again, end, revert;
- the RetentionManager, run back to back until it has deleted the reverted C and dropped
  every spent entry (each the moment C is gone from the view), right before the next cycle
  uploads C again under the same name.

No step waits for the brokers; each answer of either broker must be the exact COUNT(*) and
SUM(Distance) of the table (from the Avro rows): never A+B and C together, never neither."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from sprig.stack.cluster import broker_process
from sprig.stack.process import free_port
from tasks.lineage_client import (
    end_replace_segments,
    revert_replace_segments,
    segment_lineage,
    start_replace_segments,
)
from tests.cluster_e2e.airline_lineage import airline_days, load_days, upload
from tests.cluster_e2e.conftest import TABLE, Cluster, start_cluster, stop_cluster

pytestmark = pytest.mark.integration

SQL = f"SELECT COUNT(*), SUM(Distance) FROM {TABLE}"
CYCLES = 30


@dataclass
class Stress:
    cluster: Cluster
    brokers: list[str]  # query URLs of both brokers
    a: str
    b: str
    c: str
    tar_c: Path
    expected: tuple[int, float]


@pytest.fixture(scope="module")
def stress(zookeeper, pinot_examples, tmp_path_factory) -> Iterator[Stress]:
    out = tmp_path_factory.mktemp("lineage-stress")
    airline = airline_days(pinot_examples, out)
    originals = [airline.build(rows, None, i) for i, rows in enumerate(airline.days)]
    c, tar_c = airline.build(airline.days[0] + airline.days[1], f"merged_{TABLE}_stress", 0)
    cluster = start_cluster(zookeeper.address, out / "cluster")
    port = free_port()
    second = broker_process(cluster.workdir, port, cluster.env, name="broker2")
    try:
        second.start()
        second.wait_ready()
        load_days(cluster, airline, originals)
        expected = (cluster.total_rows, airline.total_distance)
        yield Stress(cluster, [cluster.broker_url, f"http://127.0.0.1:{port}"],
                     originals[0][0], originals[1][0], c, tar_c, expected)  # fmt: skip
    finally:
        second.stop()
        stop_cluster(cluster)


@dataclass
class Hammer:
    """One thread per broker asking SQL back to back; every answer that is not ``expected``
    (or carries an exception) is kept with the step the cycles were at."""

    brokers: list[str]
    expected: tuple[int, float]
    step: str = "before"
    answered: int = 0
    segments_seen: collections.Counter = field(default_factory=collections.Counter)
    wrong: list = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self, url: str) -> None:
        session = requests.Session()
        while not self._stop.is_set():
            step = self.step
            try:
                body = session.post(f"{url}/query/sql", json={"sql": SQL}, timeout=30).json()
                ((count, distance),) = body["resultTable"]["rows"]
                self.segments_seen[body.get("numSegmentsQueried")] += 1
                if (count, float(distance)) != self.expected or body.get("exceptions"):
                    self.wrong.append((step, url, count, distance, body.get("exceptions")))
            except Exception as exc:  # kept as a wrong answer; the loop goes on
                self.wrong.append((step, url, None, None, repr(exc)))
            self.answered += 1

    def __enter__(self) -> Hammer:
        self._threads = [threading.Thread(target=self._run, args=(u,), daemon=True)
                         for u in self.brokers]  # fmt: skip
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def test_fast_replacement_cycles_never_double_count_or_miss_rows(stress: Stress):
    s = stress
    controller = s.cluster.controller_url
    swap = [s.a, s.b], [s.c]

    def put_c(hammer: Hammer, step: str) -> None:
        hammer.step = step
        upload(s.cluster, s.tar_c)

    with Hammer(s.brokers, s.expected) as hammer:
        time.sleep(1)
        for cycle in range(CYCLES):
            kind = cycle % 3
            if kind == 2:
                # retention over and over while the reverted C leaves the view: an entry is
                # dropped the moment its C is gone, as close as can be to a broker's rebuild
                hammer.step = f"{cycle}: retention"
                deadline = time.monotonic() + 30
                while segment_lineage(controller, TABLE, "OFFLINE")["lineageEntries"]:
                    assert time.monotonic() < deadline, "retention never dropped the entries"
                    run = s.cluster.controller("GET", "/periodictask/run?taskname="
                                               f"RetentionManager&tableName={TABLE}")  # fmt: skip
                    assert run.ok, run.text
                continue
            hammer.step = f"{cycle}: start"
            entry = start_replace_segments(controller, TABLE, "OFFLINE", *swap)
            put_c(hammer, f"{cycle}: upload")
            if kind == 1:  # the subtask is retried: forceCleanup reverts the first attempt
                hammer.step = f"{cycle}: retry start"
                entry = start_replace_segments(controller, TABLE, "OFFLINE", *swap,
                                               force_cleanup=True)  # fmt: skip
                put_c(hammer, f"{cycle}: retry upload")
            hammer.step = f"{cycle}: end"
            end_replace_segments(controller, TABLE, "OFFLINE", entry)
            hammer.step = f"{cycle}: ended"
            time.sleep(0.3)
            hammer.step = f"{cycle}: revert"
            revert_replace_segments(controller, TABLE, "OFFLINE", entry)
            hammer.step = f"{cycle}: reverted"
            time.sleep(0.3)
        time.sleep(1)
    assert hammer.answered > 50, hammer.answered
    # the brokers did switch back and forth: A, B and the third day, or C and the third day
    assert set(hammer.segments_seen) == {2, 3}, hammer.segments_seen
    assert not hammer.wrong, (
        f"{len(hammer.wrong)} of {hammer.answered} answers were off: {hammer.wrong[:8]}"
    )
