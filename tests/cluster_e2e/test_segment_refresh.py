"""A segment refreshed (uploaded again under the same name, with other rows) while queries run,
all processes: a controller, two servers and a broker, airlineStats on two segments with
replication 2. The controller tells both replicas to download the new copy; each swaps it in
only once it is loaded. A query loop through the broker meanwhile gets the old total or the
new one, never an error or a partial answer, and only the new one once both replicas swapped."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest
import requests

from engine.segment import build_segment, pack_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from tests.cluster_e2e.conftest import TABLE, load_airline, start_cluster, stop_cluster
from tests.engine.query import conformance

pytestmark = pytest.mark.integration
SQL = f"SELECT COUNT(*), SUM(ArrDelay) FROM {TABLE}"


@pytest.fixture
def two_segment_cluster(zookeeper, pinot_examples, airline_tars, tmp_path):
    running = start_cluster(zookeeper.address, tmp_path)
    try:
        load_airline(running, pinot_examples, airline_tars[:2], replication=2)
        running.wait_all_online(replicas=2)
        running.wait_broker_sees(running.total_rows)
        yield running
    finally:
        stop_cluster(running)


def totals(cluster) -> list:
    answer = cluster.query(SQL)
    return answer.get("exceptions") or answer["resultTable"]["rows"][0]


class QueryLoop(threading.Thread):
    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.answers: list = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.answers.append(totals(self.cluster))
            except (requests.RequestException, AssertionError, KeyError) as exc:
                self.answers.append(repr(exc))
            time.sleep(0.02)


def test_a_refreshed_segment_answers_old_or_new_totals_never_an_error(
    two_segment_cluster, pinot_examples, tmp_path
):
    cluster = two_segment_cluster
    name = cluster.segments[0]
    old = totals(cluster)
    # the same segment name, with only its first 50 rows
    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    rows = pa.Table.from_pylist(
        conformance.read_avro(conformance.airline_avro_files(pinot_examples)[0])
    )
    built = build_segment(rows.slice(0, 50), schema, config, tmp_path / "v2", segment_name=name)
    tar = pack_segment(built.path, tmp_path / f"{name}.tar.gz")
    new_count = cluster.total_rows - (rows.num_rows - 50)

    def refreshed(tail: list) -> bool:
        return len(tail) == 20 and all(a == tail[0] and a[0] == new_count for a in tail)

    loop = QueryLoop(cluster)
    loop.start()
    try:
        time.sleep(0.5)
        with tar.open("rb") as handle:
            response = cluster.controller(
                "POST", "/segments", params={"tableName": TABLE, "tableType": "OFFLINE"},
                files={"file": (tar.name, handle, "application/gzip")},
            )  # fmt: skip
        assert response.ok, response.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not refreshed(loop.answers[-20:]):
            time.sleep(0.1)
    finally:
        loop.stop.set()
        loop.join(30)
    answers = loop.answers
    assert answers[0] == old and refreshed(answers[-20:]), answers[-20:]
    new = answers[-1]
    assert new[1] != old[1]  # the sum changed with the count: no answer mixes the two copies
    wrong = [a for a in answers if a not in (old, new)]
    assert not wrong, (len(wrong), len(answers), wrong[:5])
