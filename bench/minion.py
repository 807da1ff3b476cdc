"""Minion benchmark: task dispatch latency, MergeRollupTask and RealtimeToOffline throughput.

    python -m bench.minion [--quick] [--dir var/bench] [--spark-master local[2]]

Starts ZooKeeper, Redis and Apache Kafka, a controller, a server, a broker
and one minion (a Celery worker with two pool processes, each with its SparkSession started
at worker start), then measures, printing the sizes used:

1. dispatch: ``--dispatch`` SegmentGenerationAndPushTask runs on small CSV files, one at a
   time (``tableMaxNumTasks`` 1): the time from sending ``POST /tasks/schedule`` to the
   minion starting the subtask (its ``startTs`` in ``/tasks/subtask/workers/progress``, in
   ms), p50 and p99. Target: p50 <= 100 ms.
2. MergeRollupTask end to end: ``--merge-segments`` OFFLINE segments of ``--merge-rows`` rows
   (the event rows of bench.datasets) concatenated by one task into 5M-row segments, with
   download, Spark, the segment writer, upload and the lineage swap; rows/s over the
   subtask's span. Target: >= 300k rows/s. In the same run, the baseline: the same rows read
   from Parquet and written back by a plain PySpark job (a SparkSession of this process).
3. RealtimeToOfflineSegmentsTask: ``--r2o-rows`` rows produced into ``--r2o-partitions``
   partitions, consumed into completed segments, then one window moved to the OFFLINE table
   as one subtask, and again (metadata and OFFLINE segments reset) as one subtask per
   partition (``splitByPartition``, two at a time); rows/s and the speed-up.

SparkSession starts are counted in the minion through a probe that bench.minion_stack installs
there (loaded as a task plugin with ``SPRIG_BENCH_SPARK_LOG`` set): every call
that creates a new SparkContext is logged with the thread that made it; the pool processes'
start-up threads are expected, a start inside a subtask is not. Target: none.

The machine (2 cores) is shared by everything here, benchmark clients included; numbers on a
busy machine are worse than on an idle one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.minion_stack import Stack
from engine.common.clock import now_ms

MERGE_TASK = "MergeRollupTask"
PUSH_TASK = "SegmentGenerationAndPushTask"
BASE_MS = 1_699_999_200_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- 1. dispatch ------------------------------------------------------------------------------


def bench_dispatch(stack: Stack, count: int) -> None:
    from bench.datasets import SCHEMA_JSON

    input_dir = stack.workdir / "dispatch_input"
    input_dir.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        lines = ["country,site_id,user_id,clicks,revenue,latency_ms,ts"]
        lines += [f"US,{i},{j},1,0.5,10,{BASE_MS + i * 1000 + j}" for j in range(20)]
        (input_dir / f"part_{i:04d}.csv").write_text("\n".join(lines) + "\n")
    table = "dispatch"
    stack.call("POST", "/schemas", json={**SCHEMA_JSON, "schemaName": table})
    stack.call("POST", "/tables", json={
        "tableName": table, "tableType": "OFFLINE", "tenants": {}, "metadata": {},
        "segmentsConfig": {"timeColumnName": "ts", "replication": "1", "schemaName": table},
        "tableIndexConfig": {},
        "ingestionConfig": {"batchIngestionConfig": {
            "segmentIngestionType": "APPEND",
            "batchConfigMaps": [{"inputDirURI": str(input_dir), "inputFormat": "csv"}]}},
        "task": {"taskTypeConfigsMap": {PUSH_TASK: {"tableMaxNumTasks": "1"}}},
    })  # fmt: skip
    latencies = []
    for _ in range(count):
        sent_ms = now_ms()
        name = stack.schedule(PUSH_TASK, f"{table}_OFFLINE")
        stack.wait_task(name, 120)
        ((start, _),) = stack.spans(name)
        latencies.append(start - sent_ms)
    segments, rows = stack.offline_rows(table)
    print(f"dispatch: {count} subtasks (one SegmentGenerationAndPushTask of one 20-row CSV "
          f"each); {segments} segments, {rows} rows pushed")  # fmt: skip
    print(f"  POST /tasks/schedule -> subtask RUNNING on the minion: "
          f"p50 {statistics.median(latencies):.0f} ms, p99 {percentile(latencies, 0.99):.0f} ms, "
          f"max {max(latencies):.0f} ms (target p50 <= 100 ms)")  # fmt: skip


# --- 2. MergeRollupTask -----------------------------------------------------------------------


def merge_inputs(root: Path, segments: int, rows: int) -> tuple[list[Path], Path]:
    """The segment tars (built once, cached under ``root``) and a Parquet copy of their rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.datasets import SCHEMA_JSON, generate_events
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    out = root / f"minion_merge_{segments}x{rows}"
    tars = [out / "tars" / f"mr_events_{i}.tar.gz" for i in range(segments)]
    parquet = out / "parquet"
    if (out / "_SUCCESS").is_file():
        return tars, parquet
    schema = Schema.from_json({**SCHEMA_JSON, "schemaName": "mr_events"})
    config = TableConfig.from_json(merge_table_config(), schema=schema)
    table = pa.Table.from_batches(list(generate_events(segments * rows)))
    parquet.mkdir(parents=True, exist_ok=True)
    for i, tar in enumerate(tars):
        part = table.slice(i * rows, rows)
        pq.write_table(part, parquet / f"part_{i:03d}.parquet")
        built = build_segment(part, schema, config, out / "segments", sequence_id=i)
        pack_segment(built.path, tar)
    (out / "_SUCCESS").write_text("done\n")
    return tars, parquet


def merge_table_config() -> dict:
    level = {"mergeType": "concat", "bucketTimePeriod": "365d", "bufferTimePeriod": "1d",
             "maxNumRecordsPerSegment": "5000000", "maxNumRecordsPerTask": "1000000000"}  # fmt: skip
    return {
        "tableName": "mr_events", "tableType": "OFFLINE", "tenants": {}, "metadata": {},
        "segmentsConfig": {"timeColumnName": "ts", "replication": "1", "schemaName": "mr_events"},
        "tableIndexConfig": {"noDictionaryColumns": ["revenue", "latency_ms", "ts"]},
        "task": {"taskTypeConfigsMap": {MERGE_TASK: {f"1year.{k}": v for k, v in level.items()}}},
    }  # fmt: skip


def bench_merge(stack: Stack, root: Path, segments: int, rows: int, spark_master: str) -> None:
    from bench.datasets import SCHEMA_JSON

    started = time.monotonic()
    tars, parquet = merge_inputs(root, segments, rows)
    print(f"merge: {segments} segments x {rows:,} rows = {segments * rows:,} rows "
          f"(inputs ready in {time.monotonic() - started:.0f} s)")  # fmt: skip
    stack.call("POST", "/schemas", json={**SCHEMA_JSON, "schemaName": "mr_events"})
    stack.call("POST", "/tables", json=merge_table_config())
    for tar in tars:
        with tar.open("rb") as handle:
            stack.call("POST", "/segments", params={"tableName": "mr_events",
                                                    "tableType": "OFFLINE"},
                       files={"file": (tar.name, handle, "application/gzip")})  # fmt: skip
    sent = time.monotonic()
    name = stack.schedule(MERGE_TASK, "mr_events_OFFLINE")
    debug = stack.wait_task(name, 3600)
    wall = time.monotonic() - sent
    spans = stack.spans(name)
    span_s = (max(e for _, e in spans) - min(s for s, _ in spans)) / 1000
    total = segments * rows
    merged = [n for n in stack.call("GET", "/segments/mr_events",
                                    params={"type": "OFFLINE"})[0]["OFFLINE"]
              if n.startswith("merged_")]  # fmt: skip
    print(f"  MergeRollupTask (concat, end to end on the minion's SparkSession, "
          f"{len(debug['subtaskInfos'])} subtask(s)): {span_s:.1f} s, "
          f"{total / span_s:,.0f} rows/s (target >= 300,000); schedule to COMPLETED "
          f"{wall:.1f} s, of which Spark (merge_tables) {stack.spark_seconds(spans):.1f} s; "
          f"{len(merged)} merged segment(s)")  # fmt: skip
    from spark_jobs.session import spark_session

    started = time.monotonic()
    spark = spark_session(spark_master, app_name="bench-baseline")
    # a first small job loads Spark's classes; the minion's session has run jobs already
    spark.range(1000).write.mode("overwrite").parquet(str(stack.workdir / "warm_up"))
    session_s = time.monotonic() - started
    try:
        out = stack.workdir / "baseline_out"
        started = time.monotonic()
        spark.read.parquet(str(parquet)).write.mode("overwrite").parquet(str(out))
        baseline_s = time.monotonic() - started
    finally:
        spark.stop()
    print(f"  baseline, plain PySpark read Parquet + write Parquet of the same rows "
          f"({spark_master}, session start and a warm-up job {session_s:.1f} s not counted): {baseline_s:.1f} s, "
          f"{total / baseline_s:,.0f} rows/s")  # fmt: skip


# --- entry ------------------------------------------------------------------------------------


def spark_starts(stack: Stack) -> None:
    starts = stack.spark_starts()
    warm = [s for s in starts if s["thread"] == "spark-prewarm"]
    print(
        f"SparkSession starts in the minion: {len(starts)} ({len(warm)} at pool process "
        f"start, {len(starts) - len(warm)} inside subtasks; target 0 inside subtasks)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default="var/bench", help="cache of built input segments")
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick run")
    parser.add_argument("--dispatch", type=int, default=None)
    parser.add_argument("--merge-segments", type=int, default=None)
    parser.add_argument("--merge-rows", type=int, default=None)
    parser.add_argument("--r2o-rows", type=int, default=None)
    parser.add_argument("--r2o-partitions", type=int, default=4)
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--only", choices=["dispatch", "merge", "r2o"], action="append")
    args = parser.parse_args(argv)
    small = args.quick
    dispatch = args.dispatch or (20 if small else 100)
    merge_segments = args.merge_segments or (4 if small else 20)
    merge_rows = args.merge_rows or (100_000 if small else 1_000_000)
    r2o_rows = args.r2o_rows or (200_000 if small else 2_000_000)
    only = set(args.only or ["dispatch", "merge", "r2o"])
    print(f"sizes: dispatch {dispatch} subtasks; merge {merge_segments} x {merge_rows:,} rows; "
          f"realtime-to-offline {r2o_rows:,} rows over {args.r2o_partitions} partitions; "
          f"minion Spark {args.spark_master} in each of 2 pool processes; {os.cpu_count()} "
          f"cores shared with everything else on this machine")  # fmt: skip
    import tempfile

    root = Path(args.dir).resolve()
    with tempfile.TemporaryDirectory(prefix="bench-minion-") as tmp:
        stack = Stack(Path(tmp), args.spark_master)
        try:
            started = time.monotonic()
            stack.start()
            print(
                f"stack up, the minion's SparkSessions started, in "
                f"{time.monotonic() - started:.0f} s"
            )
            if "dispatch" in only:
                bench_dispatch(stack, dispatch)
            if "merge" in only:
                bench_merge(stack, root, merge_segments, merge_rows, args.spark_master)
            if "r2o" in only:
                from bench.minion_realtime import bench_r2o

                bench_r2o(stack, r2o_rows, args.r2o_partitions)
            spark_starts(stack)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
