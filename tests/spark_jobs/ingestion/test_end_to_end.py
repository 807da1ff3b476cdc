"""The ingestion job against a real controller process (on the real ZooKeeper): Pinot's own
airlineStats job spec with only its paths changed, the three push types, and the controller
saying no."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_jobs.ingestion.main import main
from tests.spark_jobs.conftest import create_table, listed_segments

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A spec in Pinot's format with template variables; schema and table config URIs are left
# out, so they default to the controller's /tables/{t}/schema and /tables/{t}.
SPEC = """
jobType: ${jobType}
inputDirURI: '${input}'
includeFileNamePattern: 'glob:**/*.avro'
outputDirURI: '${output}'
overwriteOutput: true
cleanUpOutputDir: ${cleanUp}
recordReaderSpec:
  dataFormat: 'avro'
  className: 'org.apache.pinot.plugin.inputformat.avro.AvroRecordReader'
tableSpec:
  tableName: '${table}'
segmentNameGeneratorSpec:
  type: simple
  configs:
    segment.name.postfix: '${postfix}'
pinotClusterSpecs:
  - controllerURI: '${controller}'
pushJobSpec:
  pushParallelism: 2
  pushAttempts: 2
  pushRetryIntervalMillis: 100
"""


def airline_days(pinot_examples: Path, days: list[str], into: Path) -> Path:
    for day in days:
        source = next((pinot_examples / "batch/airlineStats/rawdata/2014/01" / day).glob("*.avro"))
        target = into / day / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
    return into


def run_spec(tmp_path: Path, **values: str) -> int:
    spec = tmp_path / "job.yaml"
    spec.write_text(SPEC)
    pairs = [f"{key}={value}" for key, value in {"cleanUp": "false", **values}.items()]
    return main(["--no-progress", "--spec", str(spec), "--values", *pairs])


def test_airline_stats_example_through_a_real_controller(
    spark, controller, pinot_examples, tmp_path, capsys
) -> None:
    create_table(controller, pinot_examples, "airlineStats")
    example = pinot_examples / "batch/airlineStats"
    code = main(
        [
            "--no-progress",
            "--spec", str(example / "ingestionJobSpec.yaml"),
            "--input-dir", str(example / "rawdata"),
            "--output-dir", str(tmp_path / "segments"),
            "--controller", controller,
        ]
    )  # fmt: skip
    report = capsys.readouterr().out
    assert code == 0, report
    assert "built 31 of 31 segment(s), 9746 row(s)" in report
    assert "pushed 31 of 31 segment upload(s)" in report
    expected = sorted(f"airlineStats_OFFLINE_{d}_{d}_0" for d in range(16071, 16071 + 31))
    assert listed_segments(controller, "airlineStats") == expected


def test_uri_and_metadata_push(spark, controller, pinot_examples, tmp_path, capsys) -> None:
    create_table(controller, pinot_examples, "airlinePushTypes")
    inputs = airline_days(pinot_examples, ["01", "02"], tmp_path / "in")
    common = {"input": str(inputs), "table": "airlinePushTypes", "controller": controller}
    assert run_spec(
        tmp_path, jobType="SegmentCreationAndUriPush", output=str(tmp_path / "uri"),
        postfix="uri", **common,
    ) == 0, capsys.readouterr().out  # fmt: skip
    assert run_spec(
        tmp_path, jobType="SegmentCreationAndMetadataPush", output=str(tmp_path / "meta"),
        postfix="meta", **common,
    ) == 0, capsys.readouterr().out  # fmt: skip
    assert listed_segments(controller, "airlinePushTypes") == [
        "airlinePushTypes_OFFLINE_16071_16071_meta_0",
        "airlinePushTypes_OFFLINE_16071_16071_uri_0",
        "airlinePushTypes_OFFLINE_16072_16072_meta_0",
        "airlinePushTypes_OFFLINE_16072_16072_uri_0",
    ]


def test_tar_push_of_a_rejected_segment_reports_each_result(
    spark, controller, pinot_examples, tmp_path, capsys
) -> None:
    create_table(controller, pinot_examples, "airlineRejects")
    inputs = airline_days(pinot_examples, ["03"], tmp_path / "in")
    out = tmp_path / "out"
    common = {"input": str(inputs), "table": "airlineRejects", "controller": controller}
    assert (
        run_spec(tmp_path, jobType="SegmentCreation", output=str(out), postfix="x", **common) == 0
    )
    (out / "broken.tar.gz").write_bytes(b"not a tar")
    capsys.readouterr()
    code = run_spec(tmp_path, jobType="SegmentTarPush", output=str(out), postfix="x", **common)
    report = capsys.readouterr().out
    assert code == 1
    assert "pushed 1 of 2 segment upload(s)" in report
    (failure,) = [line for line in report.splitlines() if "FAIL" in line]
    assert re.search(r"FAIL broken -> .*: rejected by the controller \(HTTP 400: ", failure)
    assert listed_segments(controller, "airlineRejects") == [
        "airlineRejects_OFFLINE_16073_16073_x_0"
    ]


def test_unknown_table_stops_before_building(spark, controller, pinot_examples, tmp_path, capsys):
    inputs = airline_days(pinot_examples, ["04"], tmp_path / "in")
    out = tmp_path / "out"
    code = run_spec(
        tmp_path, jobType="SegmentCreationAndTarPush", input=str(inputs), output=str(out),
        table="noSuchTable", postfix="x", controller=controller,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"{controller}/tables/noSuchTable" in err and "Traceback" not in err
    assert not out.exists()


def test_unknown_schema_stops_before_building(spark, controller, pinot_examples, tmp_path, capsys):
    inputs = airline_days(pinot_examples, ["05"], tmp_path / "in")
    spec = tmp_path / "job.yaml"
    spec.write_text(SPEC)
    code = main(
        [
            "--no-progress", "--spec", str(spec),
            "--schema", f"{controller}/schemas/noSuchSchema",
            "--values", "jobType=SegmentCreation", f"input={inputs}", f"output={tmp_path / 'out'}",
            "table=airlineStats", "postfix=x", f"controller={controller}", "cleanUp=false",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"the controller has no schema at {controller}/schemas/noSuchSchema (404" in err


def test_nothing_is_pushed_when_a_file_fails(spark, controller, pinot_examples, tmp_path, capsys):
    create_table(controller, pinot_examples, "airlineHalf")
    inputs = airline_days(pinot_examples, ["06", "07"], tmp_path / "in")
    (inputs / "08").mkdir()
    (inputs / "08/broken.avro").write_bytes(b"not avro at all")
    code = run_spec(
        tmp_path, jobType="SegmentCreationAndTarPush", input=str(inputs),
        output=str(tmp_path / "out"), table="airlineHalf", postfix="x", controller=controller,
    )  # fmt: skip
    report = capsys.readouterr().out
    assert code == 1
    assert "built 2 of 3 segment(s)" in report
    assert "nothing was pushed because 1 of 3 file(s) failed to build" in report
    assert listed_segments(controller, "airlineHalf") == []


def test_clean_up_output_dir_after_a_push(spark, controller, pinot_examples, tmp_path, capsys):
    create_table(controller, pinot_examples, "airlineCleanUp")
    inputs = airline_days(pinot_examples, ["09"], tmp_path / "in")
    out = tmp_path / "out"
    code = run_spec(
        tmp_path, jobType="SegmentCreationAndTarPush", input=str(inputs), output=str(out),
        table="airlineCleanUp", postfix="x", controller=controller, cleanUp="true",
    )  # fmt: skip
    assert code == 0, capsys.readouterr().out
    assert listed_segments(controller, "airlineCleanUp") == [
        "airlineCleanUp_OFFLINE_16079_16079_x_0"
    ]
    assert not list(out.rglob("*.tar.gz"))
