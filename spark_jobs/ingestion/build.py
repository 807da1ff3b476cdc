"""Segment creation: one input file -> one segment tar in the output directory.

`build_segment_file` is a pure function of its arguments (plus the files it reads and writes)
that runs inside a Spark executor; `create_segments` is the Spark transform that maps a
DataFrame of input files to a DataFrame of build outcomes with it. Segments are built only
through the engine's public writer API (`engine.ingest.read_records`,
`engine.segment.build_segment`, `engine.segment.pack_segment`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_jobs.ingestion.files import InputFile, segment_output_dir
from spark_jobs.ingestion.naming import SegmentNamer
from spark_jobs.ingestion.spec import RecordReaderSpec

BUILT, KEPT, FAILED = "built", "kept", "failed"

TASK_SCHEMA = "path string, relative string, sequence_id int"
OUTCOME_SCHEMA = (
    "input_path string, segment_name string, tar_path string, num_rows long, "
    "num_rows_skipped long, status string, message string"
)


@dataclass(frozen=True)
class BuildContext:
    """Everything an executor needs to build segments for one job (picklable; schema and table
    config are Pinot JSON)."""

    schema: dict
    table_config: dict
    reader: RecordReaderSpec
    namer: SegmentNamer
    output_dir: str
    overwrite_output: bool = False
    fail_on_empty_segment: bool = False
    # kept in each segment's metadata (e.g. the minion's input.data.file.uri)
    custom_metadata: dict | None = None


@dataclass(frozen=True)
class BuildOutcome:
    """What happened to one input file. `status` is "built", "kept" (an existing output tar was
    left alone because overwriteOutput is false) or "failed" (then `message` says why)."""

    input_path: str
    segment_name: str | None
    tar_path: str | None
    num_rows: int
    num_rows_skipped: int
    status: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != FAILED


def build_segment_file(input_file: InputFile, context: BuildContext) -> BuildOutcome:
    """Read `input_file`, build its segment and write `<name>.tar.gz` under the output directory
    (mirroring the file's sub-directory). Never raises for a bad file: the outcome says why."""
    work_dir = Path(tempfile.mkdtemp(prefix="sprig-ingest-"))
    try:
        return _build(input_file, context, work_dir)
    except Exception as exc:  # one bad file must not fail the other files' segments
        return BuildOutcome(input_file.path, None, None, 0, 0, FAILED, _describe(exc))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def _build(input_file: InputFile, context: BuildContext, work_dir: Path) -> BuildOutcome:
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(context.schema)
    table_config = TableConfig.from_json(context.table_config)
    data = _read(input_file, context.reader, schema)
    namer = context.namer
    min_time = max_time = None
    derived_time = False
    if namer.uses_time:
        min_time, max_time = _time_range(data, namer.time_column.name)
        derived_time = namer.time_column.name not in data.column_names

    def build(name: str, into: Path) -> Any:
        return build_segment(
            data,
            schema,
            table_config,
            into,
            segment_name=name,
            sequence_id=max(input_file.sequence_id, 0),
            continue_on_error=_continue_on_error(context.table_config),
            source=input_file.path,
            custom_metadata=context.custom_metadata,
        )

    if derived_time:
        # The time column is made by an ingestion transform, so its range is known only once
        # the segment is built: build, read the range from the metadata, and rebuild under
        # the right name when it differs.
        first = build(
            namer.name(input_file.sequence_id, None, None, input_file.uri), work_dir / "a"
        )
        min_time, max_time = _metadata_time_range(first.metadata, schema, namer.time_column.name)
        name = namer.name(input_file.sequence_id, min_time, max_time, input_file.uri)
        result = first if name == first.name else build(name, work_dir / "b")
    else:
        result = build(
            namer.name(input_file.sequence_id, min_time, max_time, input_file.uri),
            work_dir / "segment",
        )
    if result.num_rows == 0 and context.fail_on_empty_segment:
        return BuildOutcome(
            input_file.path, result.name, None, 0, result.num_rows_skipped, FAILED,
            "no rows to build a segment from (failOnEmptySegment is true)",
        )  # fmt: skip
    target = segment_output_dir(Path(context.output_dir), input_file) / f"{result.name}.tar.gz"
    skipped_note = _skipped_note(result)
    if target.exists() and not context.overwrite_output:
        return BuildOutcome(
            input_file.path, result.name, str(target), result.num_rows, result.num_rows_skipped,
            KEPT, f"{target} exists and overwriteOutput is false; kept it" + skipped_note,
        )  # fmt: skip
    local_tar = work_dir / f"{result.name}.tar.gz"
    pack_segment(result.path, local_tar)
    _move_into_place(local_tar, target)
    return BuildOutcome(
        input_file.path, result.name, str(target), result.num_rows, result.num_rows_skipped,
        BUILT, skipped_note.lstrip("; "),
    )  # fmt: skip


def _read(input_file: InputFile, reader: RecordReaderSpec, schema: Any) -> Any:
    """The whole file as one Arrow table (a segment is built from one file in one go)."""
    import pyarrow as pa

    from engine.ingest.readers import read_records

    options = _reader_options(reader)
    batches = list(
        read_records(input_file.path, reader.data_format, options=options, schema=schema)
    )
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def _metadata_time_range(metadata: Any, schema: Any, column: str) -> tuple[Any, Any]:
    """The raw min/max time values of a built segment (its metadata keeps SIMPLE_DATE_FORMAT
    times as epoch millis; names use the column's own format)."""
    start, end = metadata.start_time, metadata.end_time
    time_format = schema.field(column).datetime_format
    if start is None or time_format is None or time_format.kind != "SIMPLE_DATE_FORMAT":
        return start, end
    import pyarrow as pa

    raw = time_format.from_millis(pa.array([start, end], pa.int64())).to_pylist()
    return raw[0], raw[1]


def _reader_options(reader: RecordReaderSpec) -> dict[str, Any]:
    return {str(k): v for k, v in reader.configs.items() if v is not None}


def _continue_on_error(table_config: dict) -> bool:
    value = (table_config.get("ingestionConfig") or {}).get("continueOnError", False)
    return str(value).lower() == "true"


def _time_range(table: Any, column: str) -> tuple[Any, Any]:
    """The min and max raw value of `column` in `table` (None, None when absent or all null)."""
    import pyarrow.compute as pc

    if column not in table.column_names or table.num_rows == 0:
        return None, None
    extremes = pc.min_max(table.column(column)).as_py()
    return extremes["min"], extremes["max"]


def _move_into_place(local_tar: Path, target: Path) -> None:
    """Copy the tar next to `target` under a temporary name, then rename it, so the output
    directory never holds a half-written segment tar."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    try:
        shutil.copyfile(local_tar, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _skipped_note(result: Any) -> str:
    if not result.num_rows_skipped:
        return ""
    first = f": {result.errors[0]}" if getattr(result, "errors", None) else ""
    return f"; skipped {result.num_rows_skipped} bad row(s){first}"


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 500 else text[:497] + "..."


# --- Spark -------------------------------------------------------------------------------


def task_frame(spark: Any, files: list[InputFile], parallelism: int = 0) -> Any:
    """A DataFrame of build tasks, one row per input file, in `parallelism` partitions (0 or
    more than the number of files: one partition per file, as Pinot's Spark runner does)."""
    count = len(files)
    partitions = count if parallelism <= 0 or parallelism > count else parallelism
    rows = [(f.path, f.relative, f.sequence_id) for f in files]
    return spark.sparkContext.parallelize(rows, max(partitions, 1)).toDF(TASK_SCHEMA)


def create_segments(tasks: Any, context: BuildContext) -> Any:
    """DataFrame(TASK_SCHEMA) -> DataFrame(OUTCOME_SCHEMA): each task's file built into a segment
    tar by `build_segment_file` in the executors."""

    def build_partition(rows: Iterator[Any]) -> Iterator[tuple]:
        for row in rows:
            outcome = build_segment_file(InputFile(**row.asDict()), context)
            yield dataclasses.astuple(outcome)

    # The RDD API keeps executors free of pandas, which Arrow-based DataFrame UDFs require.
    return tasks.rdd.mapPartitions(build_partition).toDF(OUTCOME_SCHEMA)


def outcomes_from_rows(rows: list[Any]) -> list[BuildOutcome]:
    outcomes = [BuildOutcome(**row.asDict()) for row in rows]
    return sorted(outcomes, key=lambda outcome: outcome.input_path)
