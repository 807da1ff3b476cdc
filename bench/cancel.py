"""Cancellation benchmark: how soon a cancelled scan stops, through a real broker and two servers.

    python -m bench.cancel [--segments 16] [--rows-per-segment 100000] [--cancels 10]

Starts ZooKeeper, a controller, two servers and a broker (``bench.cluster.start_cluster``),
loads a ``scan`` table whose raw string column makes a REGEXP_LIKE filter read every row
(no index, nothing cached), then ``--cancels`` times: sends the long scan with a
``clientQueryId``, waits until it is 300 ms into the scan, sends ``DELETE /query/{id}?client=
true`` and times the query's answer from the moment the DELETE left. Also times a
``timeoutMs=400`` run of the same scan (the deadline stops it through the same mechanism).
Prints each figure beside its target (the answer within 100 ms of the cancel).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import requests

from bench.cluster import start_cluster
from engine.segment import build_segment, pack_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

SCAN_SCHEMA = {
    "schemaName": "scan",
    "dimensionFieldSpecs": [{"name": "s", "dataType": "STRING"}, {"name": "k", "dataType": "INT"}],
    "metricFieldSpecs": [{"name": "v", "dataType": "DOUBLE"}],
}
SCAN_CONFIG = {
    "tableName": "scan",
    "tableType": "OFFLINE",
    "segmentsConfig": {"replication": "1", "schemaName": "scan"},
    "tableIndexConfig": {"noDictionaryColumns": ["s", "v"]},
}
# four regular-expression scans over every string: seconds of work on the two servers
LONG_SCAN = (
    "SELECT COUNT(*) FROM scan WHERE REGEXP_LIKE(s, 'a.*b') OR REGEXP_LIKE(s, 'c.*d') "
    "OR REGEXP_LIKE(s, 'e.*f') OR REGEXP_LIKE(s, 'g.*h.*i')"
)
TARGET_MS = 100


def scan_rows(seed: int, rows: int) -> pa.Table:
    """One segment's rows: 12-letter words (5,000 distinct), an int and a double."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghij"))
    words = ["".join(rng.choice(letters, 12)) for _ in range(5000)]
    picks = rng.integers(0, len(words), rows)
    return pa.table({
        "s": pa.array([words[i] for i in picks]),
        "k": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
        "v": pa.array(rng.random(rows)),
    })  # fmt: skip


def scan_tars(workdir: Path, segments: int, rows: int) -> list[Path]:
    schema, config = Schema.from_json(SCAN_SCHEMA), TableConfig.from_json(SCAN_CONFIG)
    tars = []
    for i in range(segments):
        built = build_segment(scan_rows(i, rows), schema, config, workdir / "built",
                              segment_name=f"scan_{i}")  # fmt: skip
        tars.append(pack_segment(built.path, workdir / f"scan_{i}.tar.gz"))
    return tars


def cancel_once(broker: str, client_id: str) -> tuple[float, dict, str]:
    """(ms from the DELETE to the answer, the answer, the DELETE's text)."""
    answer: dict = {}
    answered_at = [0.0]

    def run() -> None:
        body = {"sql": LONG_SCAN, "queryOptions": f"clientQueryId={client_id};timeoutMs=60000"}
        answer.update(requests.post(f"{broker}/query/sql", json=body, timeout=120).json())
        answered_at[0] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 10
    while LONG_SCAN not in requests.get(f"{broker}/queries", timeout=5).json().values():
        if time.monotonic() > deadline:
            raise RuntimeError("the broker never listed the scan as running")
        time.sleep(0.005)
    time.sleep(0.3)
    sent = time.monotonic()
    text = requests.delete(
        f"{broker}/query/{client_id}", params={"client": "true"}, timeout=10
    ).text
    thread.join(120)
    return (answered_at[0] - sent) * 1000, answer, text


def run(workdir: Path, segments: int, rows: int, cancels: int) -> None:
    zookeeper, processes, controller, broker_port = start_cluster(workdir)
    broker = f"http://127.0.0.1:{broker_port}"
    try:
        for path, body in (("/schemas", SCAN_SCHEMA), ("/tables", SCAN_CONFIG)):
            requests.post(f"{controller}{path}", json=body, timeout=60).raise_for_status()
        for tar in scan_tars(workdir, segments, rows):
            with tar.open("rb") as handle:
                requests.post(f"{controller}/segments", timeout=600,
                              params={"tableName": "scan", "tableType": "OFFLINE"},
                              files={"file": (tar.name, handle, "application/gzip")},
                              ).raise_for_status()  # fmt: skip
        deadline = time.monotonic() + 300
        while requests.post(f"{broker}/query/sql", json={"sql": "SELECT COUNT(*) FROM scan"},
                            timeout=60).json().get("resultTable", {}).get("rows") != [[segments * rows]]:  # fmt: skip
            if time.monotonic() > deadline:
                raise RuntimeError("the broker never served every row")
            time.sleep(0.5)
        started = time.monotonic()
        requests.post(f"{broker}/query/sql", json={"sql": LONG_SCAN,
                      "queryOptions": "timeoutMs=120000"}, timeout=180).raise_for_status()  # fmt: skip
        whole_ms = (time.monotonic() - started) * 1000
        figures = []
        for i in range(cancels):
            ms, answer, text = cancel_once(broker, f"bench-{i}")
            codes = {e["errorCode"] for e in answer.get("exceptions", [])}
            if 503 not in codes or not text.startswith("Cancelled query:"):
                raise RuntimeError(f"cancel {i} did not cancel: {text!r} {answer}")
            figures.append(ms)
        started = time.monotonic()
        requests.post(f"{broker}/query/sql", json={"sql": LONG_SCAN,
                      "queryOptions": "timeoutMs=400"}, timeout=60).raise_for_status()  # fmt: skip
        timeout_ms = (time.monotonic() - started) * 1000
    finally:
        for process in reversed(processes):
            process.stop()
        zookeeper.stop()
    figures.sort()
    print(f"bench.cancel: {segments} segments x {rows:,} rows on 2 servers; the scan uncancelled: "
          f"{whole_ms:,.0f} ms")  # fmt: skip
    print(f"cancel -> answer, {cancels} cancels 300 ms into the scan: p50 "
          f"{statistics.median(figures):.1f} ms, max {figures[-1]:.1f} ms "
          f"(target <= {TARGET_MS} ms)")  # fmt: skip
    print(f"timeoutMs=400 -> answer after {timeout_ms:.0f} ms (target <= {400 + TARGET_MS} ms)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=16)
    parser.add_argument("--rows-per-segment", type=int, default=100_000)
    parser.add_argument("--cancels", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sprig-bench-cancel-") as tmp:
        run(Path(tmp), args.segments, args.rows_per_segment, args.cancels)


if __name__ == "__main__":
    main()
