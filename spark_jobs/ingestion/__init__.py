"""Batch ingestion on Spark: Pinot's `ingestionJobSpec.yaml`, run with one segment built per
input file in Spark executors, then pushed to the controller.

Run it::

    sprig ingest --spec ingestionJobSpec.yaml [--values KEY=VALUE ...] [--master URL]
        [--input-dir URI] [--output-dir URI] [--controller URL] [--schema URI]
        [--table-config URI] [--job-type TYPE] [--root DIR] [--no-progress]
    spark-submit spark_jobs/ingestion/main.py --spec ingestionJobSpec.yaml ...

    from spark_jobs.ingestion.spec import load_job_spec
    from spark_jobs.ingestion.job import run_job
    report = run_job(load_job_spec(path, values={...}), spark=session)  # -> JobReport

Layers, bottom-up: `errors` -> `spec` (parse the YAML) -> `files` (globs, input listing, output
layout) and `naming` (segment names) -> `table_source` (schema / table config from a controller
or a file) -> `build` (file -> segment tar; the Spark transform) and `push` (tar -> controller)
-> `job` (`run_job(spec) -> JobReport`) -> `main` (`main(argv)`, `sprig ingest`).

Only local paths and file:// URIs are read and written (`pinotFSSpecs` are accepted and not
used); `executionFrameworkSpec` runner classes, `stagingDir` and `tlsSpec` are accepted and
ignored (output tars are written under a temporary name and renamed instead of staged).
"""
