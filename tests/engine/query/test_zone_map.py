"""Range filters from min/max: whole segments matched or skipped by their min/max, and raw
columns read through a per-block zone map, checked against numpy on the same rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine.query import run_query
from engine.query.zone_map import BLOCK_ROWS, RangeBounds
from engine.segment import build_segment, load_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

N = 30 * BLOCK_ROWS + 123  # a short last block
START = 1_700_000_000_000
SCHEMA = {
    "schemaName": "zones",
    "metricFieldSpecs": [
        {"name": "amount", "dataType": "DOUBLE"},
        {"name": "noise", "dataType": "LONG"},
    ],
    "dateTimeFieldSpecs": [
        {"name": "ts", "dataType": "TIMESTAMP", "format": "1:MILLISECONDS:EPOCH",
         "granularity": "1:MILLISECONDS"},
    ],
}  # fmt: skip
TABLE = {
    "tableName": "zones",
    "tableType": "OFFLINE",
    "segmentsConfig": {"timeColumnName": "ts", "replication": "1"},
    "tableIndexConfig": {"noDictionaryColumns": ["amount", "noise", "ts"]},
}


@pytest.fixture(scope="module")
def zones(tmp_path_factory):
    rng = np.random.default_rng(3)
    # event time grows with the doc id, with jitter, like an append-only log
    ts = START + np.arange(N) * 100 + rng.integers(0, 1_000, N)
    amount = np.round(rng.lognormal(1.0, 1.0, N), 2)
    amount[::997] = np.nan  # NaN never matches a range, and must not hide a block
    noise = rng.integers(0, 10_000, N)  # not clustered: zone maps cannot help
    schema = Schema.from_json(SCHEMA)
    rows = pa.table({"ts": ts, "amount": amount, "noise": noise})
    out = tmp_path_factory.mktemp("zones")
    segment = load_segment(build_segment(rows, schema, TableConfig.from_json(TABLE), out).path)
    return schema, segment, {"ts": ts, "amount": amount, "noise": noise}


T = {"lo": START + 40_000 * 100, "hi": START + 41_000 * 100}
CASES = [
    ("ts BETWEEN {lo} AND {hi}", lambda r: (r["ts"] >= T["lo"]) & (r["ts"] <= T["hi"])),
    ("ts > {lo} AND ts < {hi}", lambda r: (r["ts"] > T["lo"]) & (r["ts"] < T["hi"])),
    ("ts >= {lo}", lambda r: r["ts"] >= T["lo"]),
    ("ts < {lo}", lambda r: r["ts"] < T["lo"]),
    (f"ts >= {START}", lambda r: r["ts"] >= START),  # the whole segment: min/max
    (f"ts < {START}", lambda r: r["ts"] < START),  # none: min/max
    ("ts BETWEEN {hi} AND {lo}", lambda r: np.zeros(len(r["ts"]), bool)),  # empty range
    ("ts < {lo} OR ts > {hi}", lambda r: (r["ts"] < T["lo"]) | (r["ts"] > T["hi"])),
    ("NOT ts BETWEEN {lo} AND {hi}", lambda r: ~((r["ts"] >= T["lo"]) & (r["ts"] <= T["hi"]))),
    ("amount > 3.5", lambda r: r["amount"] > 3.5),
    ("noise BETWEEN 100 AND 5000", lambda r: (r["noise"] >= 100) & (r["noise"] <= 5000)),
    ("ts BETWEEN {lo} AND {hi} AND noise < 500",
     lambda r: (r["ts"] >= T["lo"]) & (r["ts"] <= T["hi"]) & (r["noise"] < 500)),
]  # fmt: skip


@pytest.mark.parametrize(("where", "brute"), CASES, ids=[c[0] for c in CASES])
def test_range_filters_match_numpy(zones, where, brute):
    schema, segment, arrays = zones
    mask = brute(arrays)
    sql = f"SELECT COUNT(*), SUM(noise) FROM zones WHERE {where.format(**T)}"
    response = run_query(sql, [segment], table_schema=schema)
    assert response["exceptions"] == []
    assert response["resultTable"]["rows"] == [
        [int(mask.sum()), float(arrays["noise"][mask].sum())]
    ]


def test_a_one_day_range_reads_only_the_straddling_blocks(zones):
    schema, segment, _ = zones
    sql = f"SELECT COUNT(*) FROM zones WHERE ts BETWEEN {T['lo']} AND {T['hi']}"
    scanned = run_query(sql, [segment], table_schema=schema)["numEntriesScannedInFilter"]
    assert 0 < scanned <= 4 * BLOCK_ROWS
    whole = run_query(f"SELECT COUNT(*) FROM zones WHERE ts >= {START}", [segment], table_schema=schema)  # fmt: skip
    assert whole["numEntriesScannedInFilter"] == 0
    unclustered = run_query("SELECT COUNT(*) FROM zones WHERE noise < 500", [segment], table_schema=schema)  # fmt: skip
    assert unclustered["numEntriesScannedInFilter"] == N  # fell back to one full scan


def test_range_bounds_against_min_max():
    between = RangeBounds.of("between", (10, 20))
    assert between.on_min_max(10, 20) is True
    assert between.on_min_max(21, 30) is False and between.on_min_max(0, 9) is False
    assert between.on_min_max(5, 15) is None
    assert RangeBounds.of("less_than", (10,)).on_min_max(0, 10) is None
    assert RangeBounds.of("less_than", (10,)).on_min_max(10, 12) is False
    assert RangeBounds.of("greater_than", (10,)).on_min_max(11, 12) is True
    assert RangeBounds.of("greater_than", (10,)).on_min_max(None, 12) is None  # unknown
    assert RangeBounds.of("greater_than", (10,)).on_min_max("a", "b") is None  # not comparable
