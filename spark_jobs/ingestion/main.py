"""The batch-ingestion job's entry point, for `sprig ingest` and for
`spark-submit spark_jobs/ingestion/main.py --spec FILE`.

Exit codes: 0 when every file was built and every segment pushed; 1 when some file or push
failed (the report says which); 2 when the job could not start (bad spec, no input, missing
table or schema, unreachable controller).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TextIO

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_jobs.ingestion.errors import IngestionError, SpecError
from spark_jobs.ingestion.job import JobReport, run_job
from spark_jobs.ingestion.progress import NoProgress, RichProgress
from spark_jobs.ingestion.spec import JobSpec, JobType, load_job_spec

EXIT_OK, EXIT_PARTIAL, EXIT_ERROR = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's options; shared by `sprig ingest` and the spark-submit script."""
    parser.add_argument("--spec", required=True, metavar="FILE", help="Pinot ingestionJobSpec.yaml")
    parser.add_argument(
        "--values", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
        help="values for the spec's ${KEY} template variables (environment variables are "
        "used too; these win)",
    )  # fmt: skip
    parser.add_argument(
        "--master",
        help="Spark master URL (default: spark-submit's master when launched by spark-submit, "
        "else $SPRIG_SPARK_MASTER or local[*])",
    )
    parser.add_argument(
        "--root", metavar="DIR", type=Path,
        help="directory that relative paths in the spec are taken from (default: the "
        "working directory)",
    )  # fmt: skip
    parser.add_argument("--job-type", choices=[t.value for t in JobType], help="override jobType")
    parser.add_argument("--input-dir", metavar="URI", help="override inputDirURI")
    parser.add_argument("--output-dir", metavar="URI", help="override outputDirURI")
    parser.add_argument(
        "--controller", metavar="URL",
        help="override pinotClusterSpecs with this controller; schema and table config URIs "
        "that pointed at the spec's controller are moved to it",
    )  # fmt: skip
    parser.add_argument("--schema", metavar="URI", help="override tableSpec.schemaURI")
    parser.add_argument("--table-config", metavar="URI", help="override tableSpec.tableConfigURI")
    parser.add_argument("--no-progress", action="store_true", help="do not draw progress bars")


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    """Load the spec named by `args` and apply the command-line overrides."""
    spec = load_job_spec(args.spec, values=parse_values(args.values))
    changes: dict = {}
    if args.job_type:
        changes["job_type"] = JobType(args.job_type)
    if args.input_dir:
        changes["input_dir_uri"] = args.input_dir
    if args.output_dir:
        changes["output_dir_uri"] = args.output_dir
    table = spec.table
    if args.controller:
        new = args.controller.rstrip("/")
        table = replace(
            table,
            schema_uri=_rebase(table.schema_uri, spec.controller_uris, new),
            table_config_uri=_rebase(table.table_config_uri, spec.controller_uris, new),
        )
        changes["controller_uris"] = (new,)
    if args.schema:
        table = replace(table, schema_uri=args.schema)
    if args.table_config:
        table = replace(table, table_config_uri=args.table_config)
    if table != spec.table:
        changes["table"] = table
    return replace(spec, **changes) if changes else spec


def parse_values(pairs: list[str]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--values expects KEY=VALUE, got {pair!r}")
        values[key.strip()] = value
    return values


def _rebase(uri: str | None, old_controllers: tuple[str, ...], new: str) -> str | None:
    for old in old_controllers:
        if uri and uri.startswith(old + "/"):
            return new + uri[len(old) :]
    return uri


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the job described by parsed `args`; print the report to `out` (default stdout) and
    warnings to `err` (default stderr); return the exit code. Raises IngestionError when the
    job cannot start."""
    out, err = out or sys.stdout, err or sys.stderr
    spec = spec_from_args(args)
    for warning in spec.warnings:
        print(f"warning: {warning}", file=err)
    progress = NoProgress() if args.no_progress else RichProgress()
    try:
        report = run_job(spec, root=args.root, master=args.master, progress=progress)
    finally:
        progress.finish()
    print_report(report, out)
    return EXIT_OK if report.ok else EXIT_PARTIAL


def print_report(report: JobReport, out: TextIO) -> None:
    print(f"{report.table_name}: {report.job_type.value}", file=out)
    if report.builds:
        built = [b for b in report.builds if b.ok]
        print(
            f"built {len(built)} of {len(report.builds)} segment(s), {report.total_rows} row(s)",
            file=out,
        )
        for build in report.builds:
            mark = "ok  " if build.ok else "FAIL"
            name = build.segment_name or "-"
            detail = f"  ({build.message})" if build.message else ""
            print(
                f"  {mark} {build.input_path} -> {name} [{build.num_rows} rows]{detail}", file=out
            )
    if report.pushes:
        pushed = [p for p in report.pushes if p.ok]
        print(f"pushed {len(pushed)} of {len(report.pushes)} segment upload(s)", file=out)
        for push in report.pushes:
            if not push.ok:
                print(
                    f"  FAIL {push.segment_name} -> {push.controller_uri}: {push.message}", file=out
                )
    for note in report.notes:
        print(note, file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="spark_jobs/ingestion/main.py",
        description="Build Pinot segments from files with Spark and push them to the controller, "
        "as described by a Pinot ingestion job spec.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except IngestionError as exc:
        print(f"ingest: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
