"""`sprig ingest`: run a Pinot batch ingestion job spec (build segments with Spark, push them)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from spark_jobs.ingestion.main import add_arguments

    parser = subparsers.add_parser(
        "ingest",
        help="build segments from files with Spark and push them (Pinot ingestion job spec)",
        description="Run a Pinot ingestionJobSpec.yaml: find the input files, build one segment "
        "per file in Spark executors, and push the segments to the controller. Exit code 0 when "
        "everything was built and pushed, 1 when some file or push failed (listed in the "
        "report), 2 when the job could not start.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spark_jobs.ingestion.errors import IngestionError
    from spark_jobs.ingestion.main import run as run_job
    from sprig.errors import CommandError

    try:
        return run_job(args)
    except IngestionError as exc:
        raise CommandError(str(exc)) from exc
