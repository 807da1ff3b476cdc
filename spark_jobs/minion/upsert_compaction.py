"""UpsertCompactionTask's data work: one completed segment of an upsert table rebuilt with only
its valid docs (the bitmap the servers agree on), in their original order, under its own
name and with its custom metadata, through the engine's writer.

The kept docs stay in doc-id order, so the rebuilt segment reads as the old one did with its
bitmap applied. Rows move between Arrow and Spark through Parquet files, as the other minion
jobs' do.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa

# the segment ZK custom.map key recording when a segment was last compacted (epoch ms)
COMPACTION_TIME_KEY = "UpsertCompactionTask.time"
DOC_ID = "__sprig_doc_id"


def valid_rows(spark, table: pa.Table, valid_docs: list[int], work_dir: Path) -> pa.Table:
    """``table``'s rows whose position is in ``valid_docs``, in position order."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    run = work_dir / f"compact-{uuid.uuid4().hex[:8]}"
    run.mkdir(parents=True)
    numbered = table.append_column(DOC_ID, pa.array(range(table.num_rows), pa.int64()))
    pq.write_table(numbered, run / "rows.parquet")
    pq.write_table(pa.table({DOC_ID: pa.array(valid_docs, pa.int64())}), run / "valid.parquet")
    rows = spark.read.parquet(str(run / "rows.parquet"))
    valid = spark.read.parquet(str(run / "valid.parquet"))
    rows.join(F.broadcast(valid), DOC_ID, "left_semi").write.parquet(str(run / "out"))
    kept = ds.dataset(str(run / "out"), format="parquet").to_table()
    kept = kept.sort_by(DOC_ID).drop_columns([DOC_ID])
    return kept.select(table.schema.names).cast(table.schema)


def compact_segment(spark, segment_dir: Path, schema, table_config, valid_docs: list[int],
                    out_dir: Path, compaction_time_ms: int):  # fmt: skip
    """Rebuild the segment at ``segment_dir`` with only ``valid_docs``, keeping its name and
    custom metadata and recording ``UpsertCompactionTask.time``. Returns
    ``(build_result, rows_before, rows_after)``."""
    from engine.segment import build_segment
    from spark_jobs.minion.purge import segment_contents

    name, custom, rows = segment_contents(segment_dir)
    kept = valid_rows(spark, rows, sorted(valid_docs), out_dir / "work")
    custom[COMPACTION_TIME_KEY] = str(compaction_time_ms)
    result = build_segment(kept, schema, table_config.without_ingestion_transforms(),
                           out_dir / "segments", segment_name=name, custom_metadata=custom)  # fmt: skip
    return result, rows.num_rows, kept.num_rows
