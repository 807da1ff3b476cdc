"""Segment creation in Spark executors, on Pinot's example data, through the job's `main`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.segment import load_segment, unpack_segment
from spark_jobs.ingestion.main import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AIRLINE_DAYS = range(16071, 16071 + 31)  # 2014-01-01 .. 2014-01-31 in days since the epoch


def creation_args(example: Path, table: str, input_dir: Path, output_dir: Path) -> list[str]:
    return [
        "--job-type", "SegmentCreation",
        "--input-dir", str(input_dir),
        "--output-dir", str(output_dir),
        "--schema", str(example / f"{table}_schema.json"),
        "--table-config", str(example / f"{table}_offline_table_config.json"),
    ]  # fmt: skip


def link_days(rawdata: Path, days: list[str], into: Path) -> Path:
    for day in days:
        source = next((rawdata / "2014/01" / day).glob("*.avro"))
        target = into / "2014/01" / day / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
    return into


def test_airline_stats_builds_one_segment_per_file(spark, pinot_examples, tmp_path, capsys) -> None:
    example = pinot_examples / "batch/airlineStats"
    out = tmp_path / "segments"
    code = main(
        [
            "--spec", str(example / "ingestionJobSpec.yaml"),
            *creation_args(example, "airlineStats", example / "rawdata", out),
        ]
    )  # fmt: skip
    report = capsys.readouterr().out
    assert code == 0, report
    assert "built 31 of 31 segment(s), 9746 row(s)" in report
    tars = sorted(out.rglob("*.tar.gz"))
    assert len(tars) == 31
    # Pinot's layout: the input's sub-directories mirrored, simple names with the day range.
    expected = {
        f"2014/01/{i + 1:02d}/airlineStats_OFFLINE_{d}_{d}_0.tar.gz"
        for i, d in enumerate(AIRLINE_DAYS)
    }
    assert {tar.relative_to(out).as_posix() for tar in tars} == expected
    total_docs = 0
    for tar in tars:
        segment = load_segment(unpack_segment(tar, tmp_path / "unpacked"))
        assert segment.name == tar.name.removesuffix(".tar.gz")
        total_docs += segment.total_docs
    assert total_docs == 9746


def test_normalized_date_names_and_overwrite_output(
    spark, pinot_examples, tmp_path, capsys
) -> None:
    example = pinot_examples / "batch/airlineStats"
    inputs = link_days(example / "rawdata", ["01", "02", "03"], tmp_path / "in")
    out = tmp_path / "segments"
    args = [
        "--no-progress",
        "--spec", str(example / "sparkIngestionJobSpec.yaml"),
        *creation_args(example, "airlineStats", inputs, out),
    ]  # fmt: skip
    assert main(args) == 0
    names = sorted(tar.name for tar in out.rglob("*.tar.gz"))
    assert names == [f"airlineStats_batch_2014-01-0{d}_2014-01-0{d}.tar.gz" for d in (1, 2, 3)]
    capsys.readouterr()

    # The Spark example sets overwriteOutput: true, so a second run rewrites the tars.
    before = {tar: tar.stat().st_mtime_ns for tar in out.rglob("*.tar.gz")}
    assert main(args) == 0
    assert all(tar.stat().st_mtime_ns != mtime for tar, mtime in before.items())


def test_a_bad_file_fails_alone_and_is_reported(spark, pinot_examples, tmp_path, capsys) -> None:
    example = pinot_examples / "batch/airlineStats"
    inputs = link_days(example / "rawdata", ["04", "05"], tmp_path / "in")
    broken = inputs / "2014/01/06/broken.avro"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"this is not avro")
    out = tmp_path / "segments"
    code = main(
        [
            "--no-progress",
            "--spec", str(example / "ingestionJobSpec.yaml"),
            *creation_args(example, "airlineStats", inputs, out),
        ]
    )  # fmt: skip
    report = capsys.readouterr().out
    assert code == 1
    assert "built 2 of 3 segment(s)" in report
    failed = [line for line in report.splitlines() if line.strip().startswith("FAIL")]
    assert len(failed) == 1 and str(broken) in failed[0] and "avro" in failed[0]
    assert len(list(out.rglob("*.tar.gz"))) == 2
    assert not list(out.rglob("*.partial"))


def test_billing_csv_with_progress_bar(spark, pinot_examples, tmp_path, capsys) -> None:
    example = pinot_examples / "batch/billing"
    out = tmp_path / "segments"
    code = main(
        [
            "--spec", str(example / "ingestionJobSpec.yaml"),
            *creation_args(example, "billing", example / "rawdata", out),
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert "building 1 segment(s) in 1 Spark task(s)" in captured.err
    (tar,) = out.rglob("*.tar.gz")
    assert tar.name == "billing_OFFLINE_0.tar.gz"  # simple naming, no time column
    lines = (example / "rawdata/billing_data.csv").read_text().splitlines()
    rows = sum(1 for line in lines[1:] if line.strip())  # the file ends with a blank line
    assert load_segment(unpack_segment(tar, tmp_path / "unpacked")).total_docs == rows


def test_runs_as_a_spark_submit_script(pinot_examples, tmp_path) -> None:
    example = pinot_examples / "batch/billing"
    script = Path(__file__).resolve().parents[3] / "spark_jobs/ingestion/main.py"
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    completed = subprocess.run(
        [
            str(bin_dir / "spark-submit"), "--master", "local[1]", str(script), "--no-progress",
            "--spec", str(example / "ingestionJobSpec.yaml"),
            *creation_args(example, "billing", example / "rawdata", tmp_path / "out"),
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "built 1 of 1 segment(s), 694 row(s)" in completed.stdout
    assert (tmp_path / "out/billing_OFFLINE_0.tar.gz").is_file()


@pytest.mark.parametrize("data_format", ["parquet", "json"])
def test_parquet_and_json_inputs(spark, pinot_examples, tmp_path, capsys, data_format) -> None:
    import fastavro
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    example = pinot_examples / "batch/airlineStats"
    inputs = tmp_path / "in"
    inputs.mkdir()
    expected_rows = 0
    for day in ("07", "08"):
        (source,) = (example / "rawdata/2014/01" / day).glob("*.avro")
        with source.open("rb") as handle:
            records = list(fastavro.reader(handle))
        expected_rows += len(records)
        target = inputs / f"{source.stem}.{data_format}"
        if data_format == "parquet":
            pq.write_table(pa.Table.from_pylist(records), target)
        else:
            target.write_bytes(b"\n".join(orjson.dumps(record) for record in records))
    spec = tmp_path / "job.yaml"
    spec.write_text(
        (example / "ingestionJobSpec.yaml")
        .read_text()
        .replace("glob:**/*.avro", f"glob:**/*.{data_format}")
        .replace("dataFormat: 'avro'", f"dataFormat: '{data_format}'")
    )
    out = tmp_path / "segments"
    code = main(
        ["--no-progress", "--spec", str(spec), *creation_args(example, "airlineStats", inputs, out)]
    )
    report = capsys.readouterr().out
    assert code == 0, report
    assert f"built 2 of 2 segment(s), {expected_rows} row(s)" in report
    # both files sit directly in the input directory: sequence ids 0 and 1
    assert sorted(tar.name for tar in out.glob("*.tar.gz")) == [
        "airlineStats_OFFLINE_16077_16077_0.tar.gz",
        "airlineStats_OFFLINE_16078_16078_1.tar.gz",
    ]


def test_progress_follows_spark_tasks(spark) -> None:
    import time

    from spark_jobs.ingestion.progress import spark_task_progress

    class Recorder:
        def __init__(self) -> None:
            self.updates: list[int] = []

        def start(self, description: str, total: int) -> None:
            self.total = total

        def update(self, completed: int) -> None:
            self.updates.append(completed)

        def finish(self) -> None:
            pass

    recorder = Recorder()
    with spark_task_progress(spark, recorder, "sleeping", 8):
        spark.sparkContext.parallelize(range(8), 8).map(lambda x: time.sleep(0.8) or x).collect()
    assert recorder.total == 8
    assert recorder.updates and max(recorder.updates) >= 1  # read from Spark's status tracker
    assert recorder.updates == sorted(recorder.updates)
