"""Segment lineage end to end: a controller, two servers and a broker as real processes.

Segments A and B are replaced by C, which holds exactly their rows merged, through the
minion's client (``tasks.lineage_client``): start, upload C, end, then revert; a second
replacement is abandoned and force-reverted; retention then deletes what is left over.
Throughout, a query loop asks the broker for COUNT(*) and SUM(Distance), and every single
answer must equal the totals computed from the Avro rows, never double-counting A+B and C and
never missing either."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.lineage_client import (
    LineageRequestError,
    end_replace_segments,
    revert_replace_segments,
    segment_lineage,
    start_replace_segments,
)
from tests.cluster_e2e.airline_lineage import airline_days, load_days, upload
from tests.cluster_e2e.conftest import TABLE, Cluster, start_cluster, stop_cluster

pytestmark = pytest.mark.integration

SQL = f"SELECT COUNT(*), SUM(Distance) FROM {TABLE}"


@dataclass
class Swap:
    cluster: Cluster
    a: str
    b: str
    merged: dict[str, Path]  # name -> tar of a segment holding A's and B's rows
    rows: int  # reference totals of the whole table, from the Avro files
    distance: int


@pytest.fixture(scope="module")
def swap(zookeeper, pinot_examples, tmp_path_factory) -> Iterator[Swap]:
    airline = airline_days(pinot_examples, tmp_path_factory.mktemp("lineage-e2e"))
    originals = [airline.build(rows, None, i) for i, rows in enumerate(airline.days)]
    merged = dict(airline.build(airline.days[0] + airline.days[1], f"merged_{TABLE}_{i}", 0)
                  for i in range(2))  # fmt: skip
    cluster = start_cluster(zookeeper.address, tmp_path_factory.mktemp("lineage-e2e-cluster"))
    try:
        load_days(cluster, airline, originals)
        yield Swap(cluster, originals[0][0], originals[1][0], merged, cluster.total_rows,
                   airline.total_distance)  # fmt: skip
    finally:
        stop_cluster(cluster)


def wait_online(cluster: Cluster, segment: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        view = cluster.controller("GET", f"/tables/{TABLE}/externalview").json()
        replicas = ((view or {}).get("OFFLINE") or {}).get(segment) or {}
        if len(replicas) == 2 and set(replicas.values()) == {"ONLINE"}:
            return
        time.sleep(0.1)
    raise AssertionError(f"{segment} did not come ONLINE on both servers")


@dataclass
class QueryLoop:
    """Queries the broker until stopped; every answer is kept with the phase it ran in."""

    cluster: Cluster
    expected: tuple[int, int]  # COUNT(*), SUM(Distance)
    phase: str = "before"
    answers: list[tuple[str, int, float, int, list]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            phase = self.phase
            try:
                body = self.cluster.query(SQL)
                ((count, distance),) = body["resultTable"]["rows"]
                answer = (count, distance, body["numSegmentsQueried"], body["exceptions"])
            except Exception as exc:  # kept as a wrong answer; the loop goes on
                answer = (None, None, None, [repr(exc)])
            if self.phase == phase:  # else it straddled a step and belongs to no phase
                self.answers.append((phase, *answer))

    def __enter__(self) -> QueryLoop:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def enter(self, phase: str, *, settle_s: float = 0.5) -> None:
        self.phase = phase
        self.wait_queries(phase, settle_s)
        self.check()

    def check(self) -> None:
        """Every answer so far has the reference totals and no exception."""
        wrong = [a for a in self.answers if (a[1], a[2], a[4]) != (*self.expected, [])]
        assert not wrong, f"{len(wrong)} of {len(self.answers)} answers were off: {wrong[:5]}"

    def wait_queries(self, phase: str, settle_s: float, at_least: int = 3) -> None:
        deadline = time.monotonic() + 30
        time.sleep(settle_s)
        while sum(a[0] == phase for a in self.answers) < at_least:
            assert time.monotonic() < deadline, f"no queries answered in phase {phase}"
            time.sleep(0.05)

    def wait_segments(self, phase: str, expected: int) -> None:
        """Until an answer of ``phase`` queried ``expected`` segments (the broker switched)."""
        deadline = time.monotonic() + 30
        while not any(a[0] == phase and a[3] == expected for a in self.answers):
            self.check()
            assert time.monotonic() < deadline, f"the broker never queried {expected} segments"
            time.sleep(0.05)

    def segments_seen(self, phase: str) -> set[int]:
        return {a[3] for a in self.answers if a[0] == phase}


def test_queries_never_double_count_or_miss_rows_during_a_swap(swap: Swap):
    cluster, controller = swap.cluster, swap.cluster.controller_url
    (c, tar_c), (d, tar_d) = swap.merged.items()
    with QueryLoop(cluster, (swap.rows, swap.distance)) as loop:
        loop.enter("before")
        loop.phase = "starting"
        entry = start_replace_segments(controller, TABLE, "OFFLINE", [swap.a, swap.b], [c])
        loop.enter("started")
        upload(cluster, tar_c)
        wait_online(cluster, c)
        # C is loaded on both servers, yet invisible while the entry is IN_PROGRESS
        loop.enter("uploaded", settle_s=1.0)
        loop.phase = "ending"  # a query running across a step belongs to neither side
        end_replace_segments(controller, TABLE, "OFFLINE", entry)
        loop.phase = "ended"
        loop.wait_segments("ended", 2)  # C and the third day
        loop.enter("ended")
        loop.phase = "reverting"
        revert_replace_segments(controller, TABLE, "OFFLINE", entry)
        loop.phase = "reverted"
        loop.wait_segments("reverted", 3)
        loop.enter("reverted")

        # an abandoned replacement (its minion died after the upload) is force-reverted
        abandoned = start_replace_segments(controller, TABLE, "OFFLINE", [swap.a, swap.b], [d])
        upload(cluster, tar_d)
        wait_online(cluster, d)
        loop.enter("abandoned", settle_s=1.0)
        with pytest.raises(LineageRequestError) as refused:
            revert_replace_segments(controller, TABLE, "OFFLINE", abandoned)
        assert refused.value.status == 409 and "forceRevert" in refused.value.message
        loop.phase = "force-reverting"
        revert_replace_segments(controller, TABLE, "OFFLINE", abandoned, force_revert=True)
        loop.enter("force-reverted")

        # retention deletes C, the reverted replacement's leftover, then the spent entries
        report = cluster.controller(
            "GET", f"/periodictask/run?taskname=RetentionManager&tableName={TABLE}"
        ).json()["taskReport"]  # fmt: skip
        assert report["deletedByLineage"] == {f"{TABLE}_OFFLINE": [c]}
        loop.enter("retention")

    loop.check()
    assert loop.segments_seen("before") == {3}
    assert loop.segments_seen("uploaded") == {3}  # A, B and the third day; never C
    assert loop.segments_seen("abandoned") == {3}
    assert 2 in loop.segments_seen("ended") and 3 in loop.segments_seen("reverted")
    lineage = segment_lineage(controller, TABLE, "OFFLINE")["lineageEntries"]
    assert lineage[entry]["state"] == "REVERTED"  # kept until C is gone from the view too
    # retention may already have dropped the abandoned entry: its D was deleted at the revert
    assert lineage.get(abandoned, {"state": "REVERTED"})["state"] == "REVERTED"
    segments = cluster.controller("GET", f"/segments/{TABLE}?type=OFFLINE").json()
    assert sorted(segments[0]["OFFLINE"]) == sorted(cluster.segments)
