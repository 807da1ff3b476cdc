"""SegmentGenerationAndPushTask's data work: one input file into one segment tar, built in a
Spark executor through the batch ingestion job's builder (``spark_jobs.ingestion.build``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_jobs.ingestion.build import (
    BuildContext,
    BuildOutcome,
    create_segments,
    outcomes_from_rows,
    task_frame,
)
from spark_jobs.ingestion.files import InputFile
from spark_jobs.ingestion.naming import SegmentNamer
from spark_jobs.ingestion.spec import RecordReaderSpec


def build_file_segment(
    spark: Any,
    local_path: Path,
    *,
    schema: dict,
    table_config: dict,
    input_format: str,
    reader_configs: dict[str, str],
    namer: SegmentNamer,
    output_dir: Path,
    sequence_id: int,
    input_file_uri: str,
) -> BuildOutcome:
    """Build the segment of one (local) input file; the outcome says why when it failed.

    The segment's custom metadata records ``input.data.file.uri``, which the controller copies
    into the segment's ZK metadata, so an APPEND table never ingests the file twice."""
    context = BuildContext(
        schema=schema,
        table_config=table_config,
        reader=RecordReaderSpec(input_format, configs=dict(reader_configs)),
        namer=namer,
        output_dir=str(output_dir),
        overwrite_output=True,
        custom_metadata={"input.data.file.uri": input_file_uri},
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    tasks = task_frame(spark, [InputFile(str(local_path), local_path.name, sequence_id)], 1)
    (outcome,) = outcomes_from_rows(create_segments(tasks, context).collect())
    return outcome
