"""Batch ingestion on Spark: Pinot's `ingestionJobSpec.yaml`, run with one segment built per
input file in Spark executors, then pushed to the controller.

Layers, bottom-up: `errors` -> `spec` (parse the YAML) -> `files` (globs, input listing, output
layout) and `naming` (segment names) -> `table_source` (schema / table config from a controller
or a file) -> `build` (file -> segment tar; the Spark transform) and `push` (tar -> controller)
-> `job` (`run_job(spec) -> JobReport`) -> `main` (`main(argv)`, `sprig ingest`).
"""
