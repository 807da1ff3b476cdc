"""The deterministic 20M-row event table shared by the segment, query and cluster benchmarks.

Columns: ``country`` (STRING, 10 values), ``site_id`` (INT, 1,000 values), ``user_id`` (LONG,
100,000 values), metrics ``clicks`` (INT), ``revenue`` (DOUBLE, cents), ``latency_ms`` (LONG)
and ``ts`` (TIMESTAMP, epoch ms over 30 days, increasing with the row number).

    from bench.datasets import events_schema, events_table_config, generate_events, ensure_event_segments
    dirs = ensure_event_segments("var/bench", rows=20_000_000)   # built once, then reused

Rows are generated in fixed 1M-row chunks seeded by (seed, chunk), so the first N rows are the
same whatever N is.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from engine.spi import Schema, TableConfig

CHUNK_ROWS = 1_000_000
ROWS_PER_SEGMENT = 5_000_000
START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
SPAN_MS = 30 * 86_400_000
COUNTRIES = ["US", "IN", "BR", "DE", "GB", "FR", "JP", "CA", "MX", "AU"]

SCHEMA_JSON = {
    "schemaName": "events",
    "dimensionFieldSpecs": [
        {"name": "country", "dataType": "STRING"},
        {"name": "site_id", "dataType": "INT"},
        {"name": "user_id", "dataType": "LONG"},
    ],
    "metricFieldSpecs": [
        {"name": "clicks", "dataType": "INT"},
        {"name": "revenue", "dataType": "DOUBLE"},
        {"name": "latency_ms", "dataType": "LONG"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "TIMESTAMP",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}

TABLE_CONFIG_JSON = {
    "tableName": "events",
    "tableType": "OFFLINE",
    "segmentsConfig": {"timeColumnName": "ts", "replication": "1", "schemaName": "events"},
    "tenants": {"broker": "DefaultTenant", "server": "DefaultTenant"},
    "tableIndexConfig": {
        "loadMode": "MMAP",
        "sortedColumn": ["country"],
        "invertedIndexColumns": ["site_id"],
        "rangeIndexColumns": ["latency_ms"],
        "bloomFilterColumns": ["user_id"],
        "noDictionaryColumns": ["revenue", "latency_ms", "ts"],
        "starTreeIndexConfigs": [
            {
                "dimensionsSplitOrder": ["country", "site_id"],
                "skipStarNodeCreationForDimensions": [],
                "functionColumnPairs": [
                    "COUNT__*",
                    "SUM__clicks",
                    "SUM__revenue",
                    "MAX__latency_ms",
                ],
                "maxLeafRecords": 10000,
            }
        ],
    },
    "metadata": {"customConfigs": {}},
}


def events_schema() -> Schema:
    return Schema.from_json(SCHEMA_JSON)


def events_table_config() -> TableConfig:
    return TableConfig.from_json(TABLE_CONFIG_JSON, events_schema())


def _chunk(index: int, rows: int, seed: int, total_rows: int) -> pa.RecordBatch:
    rng = np.random.default_rng([seed, index])
    first = index * CHUNK_ROWS
    row_ids = np.arange(first, first + rows, dtype=np.int64)
    # Timestamps increase with the row number, with jitter, like an append-only event log.
    ts = START_MS + (row_ids * SPAN_MS) // max(total_rows, 1) + rng.integers(0, 1000, rows)
    country = pa.DictionaryArray.from_arrays(
        pa.array(
            rng.choice(
                10, rows, p=[0.3, 0.2, 0.1, 0.08, 0.08, 0.07, 0.06, 0.05, 0.03, 0.03]
            ).astype(np.int8)
        ),
        pa.array(COUNTRIES),
    )
    return pa.record_batch(
        {
            "country": country.dictionary_decode(),
            "site_id": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
            "user_id": pa.array(rng.integers(0, 100_000, rows, dtype=np.int64) + 10_000_000),
            "clicks": pa.array(rng.poisson(2.0, rows).astype(np.int32)),
            "revenue": pa.array(np.round(rng.lognormal(1.0, 1.0, rows), 2)),
            "latency_ms": pa.array(rng.gamma(2.0, 60.0, rows).astype(np.int64)),
            "ts": pa.array(ts),
        }
    )


def generate_events(n_rows: int, seed: int = 42, *, start_row: int = 0) -> Iterator[pa.RecordBatch]:
    """Yield rows ``[start_row, n_rows)`` of the event table as record batches (<= 1M rows).
    ``start_row`` must be a multiple of 1M."""
    if start_row % CHUNK_ROWS:
        raise ValueError("start_row must be a multiple of 1,000,000")
    for index in range(start_row // CHUNK_ROWS, -(-n_rows // CHUNK_ROWS)):
        rows = min(CHUNK_ROWS, n_rows - index * CHUNK_ROWS)
        yield _chunk(index, rows, seed, n_rows)


def events_table(n_rows: int, seed: int = 42) -> pa.Table:
    return pa.Table.from_batches(list(generate_events(n_rows, seed)))


def segment_batches(
    n_rows: int, seed: int = 42, rows_per_segment: int = ROWS_PER_SEGMENT
) -> Iterator[tuple[int, Iterator[pa.RecordBatch]]]:
    """(sequence id, batches) per segment of ``rows_per_segment`` rows (a multiple of 1M)."""
    step = (
        max(CHUNK_ROWS, rows_per_segment - rows_per_segment % CHUNK_ROWS)
        if n_rows > CHUNK_ROWS
        else n_rows
    )
    for seq, start in enumerate(range(0, n_rows, step)):
        end = min(n_rows, start + step)

        def batches(start=start, end=end):
            for batch in generate_events(n_rows, seed, start_row=start - start % CHUNK_ROWS):
                yield batch
                if batch.num_rows < CHUNK_ROWS:
                    break

        yield seq, _limit(batches(), end - start)


def _limit(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if rows <= 0:
            return
        if batch.num_rows > rows:
            batch = batch.slice(0, rows)
        rows -= batch.num_rows
        yield batch


def ensure_event_segments(
    root: str | os.PathLike,
    rows: int = 20_000_000,
    seed: int = 42,
    rows_per_segment: int = ROWS_PER_SEGMENT,
) -> list[Path]:
    """Build the event table's segments under ``root/events_<rows>_<seed>/`` once and return
    their directories; later calls reuse them (a ``_SUCCESS`` manifest marks a finished set)."""
    from engine.segment import build_segment

    suffix = "" if rows_per_segment == ROWS_PER_SEGMENT else f"_{rows_per_segment}"
    out = Path(root) / f"events_{rows}_{seed}{suffix}"
    manifest = out / "_SUCCESS"
    Path(root).mkdir(parents=True, exist_ok=True)
    # Benchmarks may run side by side: one builds, the others wait and reuse.
    with open(Path(root) / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if manifest.is_file():
            return [out / name for name in orjson.loads(manifest.read_bytes())["segments"]]
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        schema, config = events_schema(), events_table_config()
        names = []
        for seq, batches in segment_batches(rows, seed, rows_per_segment):
            names.append(build_segment(batches, schema, config, out, sequence_id=seq).name)
        manifest.write_bytes(orjson.dumps({"rows": rows, "seed": seed, "segments": names}))
        return [out / name for name in names]
