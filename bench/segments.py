"""Segment benchmark: build speed, size on disk, load RSS and inverted-index lookups.

    .venv/bin/python -m bench.segments [--rows 20000000] [--dir var/bench/segments]

Builds the shared event table (bench.datasets) into ~5M-row segments with sorted, inverted,
range, bloom and star-tree indexes, single-threaded, and prints:
  - build rows/s (data generation excluded),
  - bytes on disk against the same rows written by pyarrow as zstd Parquet,
  - process RSS delta after loading every segment,
  - the time to find a 0.1%-selectivity value through the inverted index against a numpy full
    scan of the same column's forward index,
  - for each raw-column compression codec (fieldConfigList[].compressionCodec: ZSTANDARD, the
    default, LZ4, SNAPPY, PASS_THROUGH), the first segment rebuilt with it: the raw columns'
    bytes, the segment's size, and the scan speed of its raw columns (decompress every chunk
    and reduce, rows/s, median of 5).
The segments are rebuilt every run (into a fresh directory) so build speed is measured.
"""

from __future__ import annotations

import argparse
import copy
import gc
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from bench.datasets import (
    ROWS_PER_SEGMENT,
    TABLE_CONFIG_JSON,
    events_schema,
    events_table_config,
    generate_events,
    segment_batches,
)
from engine.segment import build_segment, load_segment
from engine.spi.compression import APPLIED
from engine.spi.table_config import TableConfig


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _bytes_by_column(paths: list[Path], segment) -> dict[str, int]:
    """Bytes per column (and per star-tree) summed over segments, from the index maps."""
    names = {segment.column(c).metadata.file_prefix: c for c in segment.column_names}
    out: dict[str, int] = {}
    for path in paths:
        for key, entry in orjson.loads((path / "index_map.json").read_bytes()).items():
            prefix = key.split(".", 1)[0]
            name = names.get(prefix, prefix)
            out[name] = out.get(name, 0) + entry["size"]
    return out


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(rows: int, work_dir: Path, rows_per_segment: int, seed: int) -> None:
    pa.set_cpu_count(1)  # one core: Arrow's thread pool would otherwise use every core
    schema, config = events_schema(), events_table_config()
    seg_root = work_dir / "segments"
    shutil.rmtree(seg_root, ignore_errors=True)
    seg_root.mkdir(parents=True)

    build_seconds = build_cpu = 0.0
    paths = []
    for seq, lazy_batches in segment_batches(rows, seed, rows_per_segment):
        # Materialise one segment's input first so generation is not counted as build time.
        batches = list(lazy_batches)
        start, start_cpu = time.perf_counter(), time.process_time()
        result = build_segment(batches, schema, config, seg_root, sequence_id=seq)
        build_seconds += time.perf_counter() - start
        build_cpu += time.process_time() - start_cpu
        paths.append(result.path)
        del batches
        gc.collect()

    parquet_path = work_dir / "events.zstd.parquet"
    writer = None
    for batch in generate_events(rows, seed):
        if writer is None:
            writer = pq.ParquetWriter(parquet_path, batch.schema, compression="zstd")
        writer.write_batch(batch)
    writer.close()
    seg_bytes = sum(_dir_bytes(p) for p in paths)
    parquet_bytes = parquet_path.stat().st_size

    process = psutil.Process()
    gc.collect()
    rss_before = process.memory_info().rss
    segments = [load_segment(p) for p in paths]
    rss_after = process.memory_info().rss

    # A site_id value is 1 of 1,000 uniform values: ~0.1% of rows.
    value = 123
    columns = [s.column("site_id") for s in segments]
    ids = [c.dictionary.index_of(value) for c in columns]
    forward = [np.asarray(c.dict_ids()) for c in columns]  # page the column in before timing
    inverted = [c.inverted_index for c in columns]

    def lookup() -> int:
        return sum(len(inv.bitmap(i)) for inv, i in zip(inverted, ids, strict=True))

    def scan() -> int:
        return sum(int(np.count_nonzero(f == i)) for f, i in zip(forward, ids, strict=True))

    assert lookup() == scan(), "inverted index and scan disagree"
    matches = lookup()
    lookup_s = _median_seconds(lookup, 50)
    scan_s = _median_seconds(scan, 10)

    # Star-tree vs. scan for SUM(clicks) GROUP BY country (context, not a target).
    def star_tree_sum() -> float:
        total = 0.0
        for s in segments:
            tree = s.star_trees[0]
            recs = tree.matching_records({}, group_by=["country"])
            total += float(tree.metric("SUM__clicks")[recs].sum())
        return total

    star_s = _median_seconds(star_tree_sum, 5)

    print(f"rows: {rows:,} in {len(paths)} segments (~{rows_per_segment:,} rows each), seed {seed}")
    print(
        f"build: {build_seconds:.1f} s wall -> {rows / build_seconds:,.0f} rows/s; "
        f"{build_cpu:.1f} s CPU -> {rows / build_cpu:,.0f} rows/s per core "
        f"(machine load average {psutil.getloadavg()[0]:.1f} on {psutil.cpu_count()} cores)"
    )
    print(
        f"on disk: segments {seg_bytes / 1e6:,.1f} MB vs zstd Parquet {parquet_bytes / 1e6:,.1f} MB "
        f"-> {seg_bytes / parquet_bytes:.2f}x"
    )
    for name, size in _bytes_by_column(paths, segments[0]).items():
        indexes = (
            segments[0].column(name).metadata.indexes if name in segments[0].column_names else []
        )
        print(f"  {name:<11} {size / 1e6:8.1f} MB  indexes={indexes}")
    print(
        f"load: RSS +{(rss_after - rss_before) / 1e6:.1f} MB after loading {len(segments)} segments"
    )
    print(
        f"lookup site_id={value} ({matches:,} rows, {matches / rows:.3%}): inverted index "
        f"{lookup_s * 1e3:.3f} ms vs numpy scan {scan_s * 1e3:.2f} ms -> {scan_s / lookup_s:,.0f}x faster"
    )
    print(f"star-tree SUM(clicks) GROUP BY country over all segments: {star_s * 1e3:.2f} ms")
    codec_table(segments[0], work_dir / "codecs")


def codec_table(segment, work_dir: Path) -> None:
    """Rebuild ``segment``'s rows with each codec on the raw columns; print sizes and scan
    speed (every raw column decompressed whole, then summed: what a query's first scan of a
    segment pays before the decoded-column cache holds it)."""
    rows = segment.to_arrow()
    raw = list(TABLE_CONFIG_JSON["tableIndexConfig"]["noDictionaryColumns"])
    print(f"codecs of the raw columns {', '.join(raw)} ({rows.num_rows:,} rows, one segment):")
    print(f"  {'codec':<13}{'raw MB':>9}{'segment MB':>12}{'scan M rows/s':>15}")
    for codec in APPLIED:
        config_json = copy.deepcopy(TABLE_CONFIG_JSON)
        config_json["fieldConfigList"] = [
            {"name": c, "encodingType": "RAW", "compressionCodec": codec} for c in raw
        ]
        config = TableConfig.from_json(config_json, events_schema())
        built = build_segment(rows, events_schema(), config, work_dir / codec, segment_name=codec)
        rebuilt = load_segment(built.path)
        prefixes = {rebuilt.column(c).metadata.file_prefix for c in raw}
        index = orjson.loads((built.path / "index_map.json").read_bytes())
        raw_bytes = sum(e["size"] for k, e in index.items() if k.split(".", 1)[0] in prefixes)

        def scan(rebuilt=rebuilt) -> float:
            return sum(float(np.sum(rebuilt.column(c).values(), dtype=np.float64)) for c in raw)

        assert scan() == scan(), "a codec's scan is not repeatable"
        seconds = _median_seconds(scan, 5)
        print(f"  {codec:<13}{raw_bytes / 1e6:9.1f}{_dir_bytes(built.path) / 1e6:12.1f}"
              f"{rows.num_rows * len(raw) / seconds / 1e6:15.1f}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--rows-per-segment", type=int, default=ROWS_PER_SEGMENT)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--dir", type=Path, default=None, help="work directory (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if args.dir is None:
        with tempfile.TemporaryDirectory(prefix="sprig-bench-") as tmp:
            run(args.rows, Path(tmp), args.rows_per_segment, args.seed)
    else:
        args.dir.mkdir(parents=True, exist_ok=True)
        run(args.rows, args.dir, args.rows_per_segment, args.seed)


if __name__ == "__main__":
    main()
