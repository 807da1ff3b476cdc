"""Running one ingestion job spec end to end: find the input files, build one segment per file in
Spark executors, then push the segment tars to every controller of `pinotClusterSpecs`.

If any file fails to build, nothing is pushed (a table never gets half of a batch by accident);
the tars that were built stay in the output directory and the report lists every file and
every push with its result.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spark_jobs.ingestion.build import (
    FAILED,
    BuildContext,
    BuildOutcome,
    create_segments,
    outcomes_from_rows,
    task_frame,
)
from spark_jobs.ingestion.errors import SparkJobError, SpecError
from spark_jobs.ingestion.files import list_input_files, list_segment_tars, local_path
from spark_jobs.ingestion.naming import FIXED, SegmentNamer
from spark_jobs.ingestion.progress import NoProgress, ProgressSink, spark_task_progress
from spark_jobs.ingestion.push import PushOutcome, PushTarget, push_segment, segment_download_uri
from spark_jobs.ingestion.spec import JobSpec, JobType
from spark_jobs.ingestion.table_source import (
    check_table_config,
    default_schema_uri,
    default_table_config_uri,
    fetch_schema,
    fetch_table_config,
)


@dataclass
class JobReport:
    """What a job did: one build outcome per input file and one push outcome per segment and
    controller. `notes` explains anything that was deliberately not done."""

    job_type: JobType
    table_name: str
    builds: list[BuildOutcome] = field(default_factory=list)
    pushes: list[PushOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    push_skipped: bool = False

    @property
    def ok(self) -> bool:
        return (
            all(b.ok for b in self.builds)
            and all(p.ok for p in self.pushes)
            and not self.push_skipped
        )

    @property
    def total_rows(self) -> int:
        return sum(b.num_rows for b in self.builds if b.ok)


def run_job(
    spec: JobSpec,
    *,
    root: Path | None = None,
    spark: Any = None,
    master: str | None = None,
    progress: ProgressSink | None = None,
) -> JobReport:
    """Run `spec`. Relative paths in the spec are taken from `root` (default: the working
    directory). `spark` is an existing SparkSession; without one, a session on `master` is
    started. Raises IngestionError for a problem that stops the whole job before any segment
    is pushed; per-file and per-push failures are in the report instead."""
    progress = progress or NoProgress()
    report = JobReport(spec.job_type, spec.table.table_name)
    output_dir = local_path(spec.output_dir_uri or "", root, "outputDirURI")
    table_config = None
    if spec.job_type.push_mode:
        table_config = _check_controllers_have_table(spec)
    if spec.job_type.creates_segments:
        report.builds = _create(spec, output_dir, root, spark, master, progress)
        _flag_duplicate_names(report.builds)
    if not spec.job_type.push_mode:
        return report
    if spec.job_type.creates_segments:
        failed = [b for b in report.builds if not b.ok]
        if failed:
            report.push_skipped = True
            report.notes.append(
                f"nothing was pushed because {len(failed)} of {len(report.builds)} file(s) "
                f"failed to build; the {len(report.builds) - len(failed)} built segment tar(s) "
                f"are in {output_dir} (push them with jobType SegmentTarPush after fixing the input)"
            )
            return report
        tars = [Path(b.tar_path) for b in report.builds if b.tar_path]
    else:
        tars = list_segment_tars(output_dir, spec.push.push_file_name_pattern)
    report.pushes = _push(spec, tars, table_config or {}, progress)
    return report


def _check_controllers_have_table(spec: JobSpec) -> dict:
    """Every controller we push to must know the table; its config gives the table type."""
    config: dict = {}
    for controller in spec.controller_uris:
        uri = default_table_config_uri(controller, spec.table.table_name)
        config = fetch_table_config(uri, spec.table.table_name, auth_token=spec.auth_token)
    return config


def _create(
    spec: JobSpec,
    output_dir: Path,
    root: Path | None,
    spark: Any,
    master: str | None,
    progress: ProgressSink,
) -> list[BuildOutcome]:
    table_name = spec.table.table_name
    controller = spec.controller_uris[0] if spec.controller_uris else None
    schema_uri = spec.table.schema_uri or (
        controller and default_schema_uri(controller, table_name)
    )
    config_uri = spec.table.table_config_uri or (
        controller and default_table_config_uri(controller, table_name)
    )
    if not schema_uri or not config_uri:
        missing = "schemaURI" if not schema_uri else "tableConfigURI"
        raise SpecError(f"{spec.source}: tableSpec needs '{missing}' or a pinotClusterSpecs entry")
    naming = spec.segment_name_generator
    files = list_input_files(
        local_path(spec.input_dir_uri or "", root, "inputDirURI"),
        spec.include_file_name_pattern,
        spec.exclude_file_name_pattern,
        spec.search_recursively,
        global_sequence_id=_global_sequence_id(naming.configs),
    )
    schema = fetch_schema(schema_uri, root, spec.auth_token)
    table_config = fetch_table_config(config_uri, table_name, root, spec.auth_token)
    check_table_config(table_config, schema, table_name)
    namer = SegmentNamer.create(naming.type, naming.configs, table_config, schema)
    if namer.type == FIXED and len(files) > 1:
        raise SpecError(
            f"{spec.source}: segmentNameGeneratorSpec type 'fixed' names every segment "
            f"{naming.configs['segment.name']!r}, but {len(files)} input files match"
        )
    context = BuildContext(
        schema=schema,
        table_config=table_config,
        reader=spec.record_reader,
        namer=namer,
        output_dir=str(output_dir),
        overwrite_output=spec.overwrite_output,
        fail_on_empty_segment=spec.fail_on_empty_segment,
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    spark = spark or start_spark(master)
    tasks = task_frame(spark, files, spec.segment_creation_job_parallelism)
    partitions = tasks.rdd.getNumPartitions()
    description = f"building {len(files)} segment(s) in {partitions} Spark task(s)"
    with spark_task_progress(spark, progress, description, partitions):
        try:
            rows = create_segments(tasks, context).collect()
        except Exception as exc:  # Py4J and PySpark errors share no base class worth naming
            raise SparkJobError(
                f"the Spark job building the segments failed: {_first_line(exc)}"
            ) from exc
    progress.update(partitions)
    return outcomes_from_rows(rows)


def start_spark(master: str | None) -> Any:
    """A SparkSession on `master`. Without one, a job launched by spark-submit keeps the
    submitter's master and configuration; otherwise $SPRIG_SPARK_MASTER or local[*]."""
    # Python workers must run this interpreter, the one with the engine's dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # set by spark-submit
        from pyspark.sql import SparkSession

        return SparkSession.builder.appName("sprig-ingest").getOrCreate()
    from spark_jobs.session import spark_session

    try:
        return spark_session(master, app_name="sprig-ingest")
    except Exception as exc:  # a bad master URL or no Java surface as assorted Py4J errors
        where = master or os.environ.get("SPRIG_SPARK_MASTER") or "local[*]"
        raise SparkJobError(f"cannot start Spark on master {where!r}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else exc.__class__.__name__


def _global_sequence_id(configs: dict[str, str]) -> bool:
    if configs.get("use.global.directory.sequence.id", "").lower() == "true":
        return True
    return configs.get("local.directory.sequence.id", "").lower() == "false"


def _flag_duplicate_names(builds: list[BuildOutcome]) -> None:
    """Two files that got the same segment name would replace each other in the table."""
    by_name: dict[str, list[int]] = defaultdict(list)
    for index, build in enumerate(builds):
        if build.ok and build.segment_name:
            by_name[build.segment_name].append(index)
    for name, indexes in by_name.items():
        if len(indexes) < 2:
            continue
        paths = ", ".join(builds[i].input_path for i in indexes)
        for i in indexes:
            builds[i] = BuildOutcome(
                builds[i].input_path, name, builds[i].tar_path, builds[i].num_rows,
                builds[i].num_rows_skipped, FAILED,
                f"segment name {name!r} is shared by {len(indexes)} input files ({paths}); "
                f"change segmentNameGeneratorSpec so each file gets its own name",
            )  # fmt: skip


def _push(
    spec: JobSpec, tars: list[Path], table_config: dict, progress: ProgressSink
) -> list[PushOutcome]:
    mode = spec.job_type.push_mode
    table_type = str(table_config.get("tableType") or "OFFLINE").upper()
    targets = [
        PushTarget(
            controller_uri=controller,
            table_name=spec.table.table_name,
            table_type=table_type,
            mode=mode,
            attempts=spec.push.push_attempts,
            retry_interval_millis=spec.push.push_retry_interval_millis,
            auth_token=spec.auth_token,
        )
        for controller in spec.controller_uris
    ]
    metadata_files = _segment_metadata_files() if mode == "METADATA" else ()
    jobs = [(target, tar) for tar in tars for target in targets]
    progress.start(f"pushing {len(tars)} segment(s)", len(jobs))

    def push_one(job: tuple[PushTarget, Path]) -> PushOutcome:
        target, tar = job
        uri = segment_download_uri(tar, spec.push.segment_uri_prefix, spec.push.segment_uri_suffix)
        return push_segment(target, tar, download_uri=uri, metadata_files=metadata_files)

    outcomes = []
    with ThreadPoolExecutor(max_workers=spec.push.push_parallelism) as pool:
        for outcome in pool.map(push_one, jobs):
            outcomes.append(outcome)
            progress.update(len(outcomes))
    if spec.clean_up_output_dir:
        pushed_everywhere = defaultdict(list)
        for outcome in outcomes:
            pushed_everywhere[outcome.tar_path].append(outcome.ok)
        for tar_path, results in pushed_everywhere.items():
            if all(results):
                Path(tar_path).unlink(missing_ok=True)
    return outcomes


def _segment_metadata_files() -> tuple[str, ...]:
    from engine.segment.files import CREATION_META_FILE, METADATA_FILE

    return (METADATA_FILE, CREATION_META_FILE)
