"""MergeRollupTask's data work: DataFrame -> DataFrame transforms, and the thin entry that
feeds them the rows of input segments and returns the rows of each output segment.

- ``concat``: every input row, unchanged;
- ``rollup``: one row per distinct dimension tuple (the time column counts as a dimension),
  each metric aggregated by its ``<metric>.aggregationType`` (sum by default, max, min);
- ``dedup``: the distinct rows.

Before merging, ``roundBucketTimePeriod`` floors the time column to that period and
``eraseDimensionValues`` sets the listed dimensions to their default null value, so that
rollup groups more rows. Rows are never merged across the caller's group columns (the time
bucket of ``partitionBucketTimePeriod`` and the table's partitions), so each output segment
holds one bucket of one partition, and ``maxNumRecordsPerSegment`` splits a group into
segments in time order.

Rows move between Arrow (the engine's segment reader and writer) and Spark through Parquet
files in a work directory, which needs no pandas on either side.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

MERGE_TYPES = ("concat", "rollup", "dedup")
AGGREGATION_TYPES = ("sum", "max", "min")


class MergeSpecError(ValueError):
    """A merge config the transforms cannot honour; ``key`` names the config key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"Invalid task config '{key}': {message}")


@dataclasses.dataclass(frozen=True)
class MergeSpec:
    merge_type: str = "concat"
    time_column: str | None = None
    time_unit_ms: int = 1  # milliseconds in one unit of the time column's stored values
    round_bucket_ms: int | None = None
    dimensions: tuple[str, ...] = ()  # every non-metric column, the time column included
    metrics: dict[str, str] = dataclasses.field(default_factory=dict)  # metric -> aggregation
    erase_dimensions: dict[str, Any] = dataclasses.field(default_factory=dict)  # col -> default
    max_records_per_segment: int = 5_000_000
    # integer columns the caller added to every input row (time bucket, partition): rows are
    # never merged across their values, and each output segment holds one value of each
    group_columns: tuple[str, ...] = ()

    def __post_init__(self):
        if self.merge_type not in MERGE_TYPES:
            raise MergeSpecError("mergeType", f"must be one of {', '.join(MERGE_TYPES)}, "
                                              f"got {self.merge_type!r}")  # fmt: skip
        for metric, aggregation in self.metrics.items():
            if aggregation not in AGGREGATION_TYPES:
                raise MergeSpecError(f"{metric}.aggregationType",
                                     f"must be one of {', '.join(AGGREGATION_TYPES)}, "
                                     f"got {aggregation!r}")  # fmt: skip
        if self.max_records_per_segment <= 0:
            raise MergeSpecError("maxNumRecordsPerSegment", "must be positive")
        if self.round_bucket_ms is not None and not self.time_column:
            raise MergeSpecError("roundBucketTimePeriod", "the table has no time column")


# --- transforms ----------------------------------------------------------------------------


def round_time(df, column: str, bucket_ms: int, unit_ms: int):
    """Floor ``column`` (stored in units of ``unit_ms``) to a multiple of ``bucket_ms``."""
    from pyspark.sql import functions as F

    original = df.schema[column].dataType
    millis = F.col(column).cast("long") * F.lit(unit_ms)
    floored = F.floor(millis / F.lit(bucket_ms)) * F.lit(bucket_ms)
    return df.withColumn(column, (floored / F.lit(unit_ms)).cast(original))


def erase_dimensions(df, defaults: dict[str, Any]):
    """Replace each listed dimension's values with its default null value."""
    from pyspark.sql import functions as F

    for column, default in defaults.items():
        df = df.withColumn(column, F.lit(default).cast(df.schema[column].dataType))
    return df


def rollup(df, dimensions: tuple[str, ...], metrics: dict[str, str]):
    from pyspark.sql import functions as F

    aggregate = {"sum": F.sum, "max": F.max, "min": F.min}
    columns = [aggregate[kind](F.col(metric)).alias(metric) for metric, kind in metrics.items()]
    if not columns:  # a table without metrics rolls up to its distinct rows
        return df.select(*dimensions).distinct()
    grouped = df.groupBy(*dimensions).agg(*columns)
    # sums widen ints to longs; keep each metric's own type (the segment writer expects it)
    for metric in metrics:
        grouped = grouped.withColumn(metric, F.col(metric).cast(df.schema[metric].dataType))
    return grouped.select(*df.columns)


def merge(df, spec: MergeSpec):
    """The merged rows of ``df`` (every input segment's rows) under ``spec``."""
    if spec.round_bucket_ms:
        df = round_time(df, spec.time_column, spec.round_bucket_ms, spec.time_unit_ms)
    if spec.erase_dimensions:
        df = erase_dimensions(df, spec.erase_dimensions)
    if spec.merge_type == "rollup":
        return rollup(df, spec.dimensions + spec.group_columns, spec.metrics)
    if spec.merge_type == "dedup":
        return df.distinct()
    return df


# --- entry ---------------------------------------------------------------------------------


def merge_tables(spark, tables: list, spec: MergeSpec, work_dir: Path) -> list:
    """The Arrow tables of the output segments, ordered by group then sequence, from the
    input segments' rows. The ``spec.group_columns`` are dropped from the output.

    One Spark pass with no sort: the merged rows are written once and the driver cuts the
    files into segments (spark_jobs.minion.segment_cut). The work files are uncompressed:
    they live for one call, and (de)compressing them cost more CPU than the disk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark_jobs.minion.segment_cut import cut_output

    run = work_dir / f"merge-{uuid.uuid4().hex[:8]}"
    inputs = run / "in"
    inputs.mkdir(parents=True)
    for index, table in enumerate(tables):
        pq.write_table(table, inputs / f"{index}.parquet", compression="none")
    groups = spec.group_columns
    output = run / "out"
    merge(spark.read.parquet(str(inputs)), spec).write.option("compression", "none").parquet(
        str(output))  # fmt: skip
    columns = [c for c in tables[0].schema.names if c not in groups]
    schema = pa.schema([tables[0].schema.field(c) for c in columns])
    return cut_output(sorted(output.glob("part-*.parquet")), groups, spec.time_column,
                      spec.max_records_per_segment, columns, schema)  # fmt: skip


# --- segments in, segments out ---------------------------------------------------------------


def spec_for_table(schema, table_config, *, merge_type: str = "concat",
                   round_bucket_ms: int | None = None, erase: tuple[str, ...] = (),
                   aggregations: dict[str, str] | None = None,
                   max_records_per_segment: int = 5_000_000) -> MergeSpec:  # fmt: skip
    """The MergeSpec of a table (engine Schema and TableConfig): every metric is aggregated
    (sum unless ``aggregations`` says otherwise), every other column is a dimension."""
    from engine.common.types import FieldType

    metrics = {f.name: (aggregations or {}).get(f.name, "sum") for f in schema.fields
               if f.field_type is FieldType.METRIC}  # fmt: skip
    for name in aggregations or {}:
        if name not in metrics:
            raise MergeSpecError(f"{name}.aggregationType", "is not a metric of the schema")
    dimensions = tuple(name for name in schema.columns if name not in metrics)
    time_column = table_config.time_column_name or schema.time_column_name
    unit_ms = 1
    if time_column and round_bucket_ms:
        time_format = schema.field(time_column).datetime_format
        if time_format is None or time_format.kind == "SIMPLE_DATE_FORMAT":
            raise MergeSpecError("roundBucketTimePeriod",
                                 f"time column {time_column} is not in epoch units")  # fmt: skip
        unit_ms = int(time_format.unit_millis) if time_format.kind == "EPOCH" else 1
    defaults = {}
    for name in erase:
        if name not in dimensions or name == time_column:
            raise MergeSpecError("eraseDimensionValues", f"{name} is not a dimension")
        defaults[name] = schema.field(name).default_null_value
    return MergeSpec(merge_type=merge_type, time_column=time_column, time_unit_ms=unit_ms,
                     round_bucket_ms=round_bucket_ms, dimensions=dimensions, metrics=metrics,
                     erase_dimensions=defaults,
                     max_records_per_segment=max_records_per_segment)  # fmt: skip


BUCKET_COLUMN = "__sprig_time_bucket"
PARTITION_COLUMN = "__sprig_partition_"  # + the partition column's index


def add_group_columns(table, schema, table_config, time_column: str | None,
                      bucket_ms: int | None):  # fmt: skip
    """``table`` with the columns rows are grouped by: the time bucket (epoch ms of the time
    column // ``bucket_ms``) and, for a partitioned table, each partition column's partition,
    so no output segment spans two buckets or two partitions (as Pinot's time and table
    partitioners). Returns (table, the added column names)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from engine.spi.partition import partition_function
    from engine.spi.partition_hashes import value_text

    added = []
    if bucket_ms and time_column:
        millis = schema.field(time_column).datetime_format.to_millis(
            table.column(time_column).combine_chunks())  # fmt: skip
        bucket = pc.floor(pc.divide(pc.cast(millis, pa.float64()), float(bucket_ms)))
        table = table.append_column(BUCKET_COLUMN, pc.cast(bucket, pa.int64()))
        added.append(BUCKET_COLUMN)
    for index, (column, config) in enumerate(
        sorted(table_config.index_config.segment_partition_config.items())
    ):
        function = partition_function(config.function_name, config.num_partitions,
                                      config.function_config)  # fmt: skip
        data_type = schema.field(column).data_type
        values = [function.partition(value_text(v, data_type))
                  for v in table.column(column).to_pylist()]  # fmt: skip
        table = table.append_column(f"{PARTITION_COLUMN}{index}", pa.array(values, pa.int32()))
        added.append(f"{PARTITION_COLUMN}{index}")
    return table, tuple(added)


def merged_segment_name(prefix: str, table, time_column: str | None, sequence: int) -> str:
    """Pinot's output name: ``<prefix>_<minTime>_<maxTime>_<sequence>``, the times being the
    segment's smallest and largest time column values as stored."""
    import re

    import pyarrow.compute as pc

    if not time_column or table.num_rows == 0:
        return f"{prefix}_{sequence}"
    bounds = pc.min_max(table.column(time_column))
    low, high = (re.sub(r"[^A-Za-z0-9.-]", "-", str(bounds[k].as_py())) for k in ("min", "max"))
    return f"{prefix}_{low}_{high}_{sequence}"


def merge_segments(spark, segment_dirs: list[Path], schema, table_config, spec: MergeSpec,
                   out_dir: Path, name_prefix: str, custom_metadata: dict[str, str],
                   bucket_ms: int | None = None) -> list:  # fmt: skip
    """Read the input segments, merge their rows on Spark per time bucket of ``bucket_ms``
    (and per partition of a partitioned table), and build the output segments through the
    engine's writer, named by merged_segment_name from ``name_prefix`` and carrying
    ``custom_metadata``. Returns the engine's SegmentBuildResults, in name sequence order."""
    from engine.segment import build_segment, load_segment

    tables, groups = [], ()
    for directory in segment_dirs:
        segment = load_segment(directory)
        try:
            table = segment.to_arrow()
        finally:
            segment.close()
        table, groups = add_group_columns(table, schema, table_config, spec.time_column,
                                          bucket_ms)  # fmt: skip
        tables.append(table)
    spec = dataclasses.replace(spec, group_columns=groups)
    outputs = merge_tables(spark, tables, spec, out_dir / "work")
    return [
        build_segment(
            table,
            schema,
            table_config,
            out_dir / "segments",
            segment_name=merged_segment_name(name_prefix, table, spec.time_column, i),
            custom_metadata=dict(custom_metadata),
        )
        for i, table in enumerate(outputs)
    ]
