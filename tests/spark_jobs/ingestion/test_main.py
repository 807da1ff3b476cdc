"""The job's command line: bad input stops it before Spark starts, with one clear line and
exit code 2 (`main`) or the CLI's CommandError (`sprig ingest`)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from spark_jobs.ingestion.main import main
from sprig.cli import main as sprig_main

SPEC = """
jobType: {job_type}
inputDirURI: '{input_dir}'
includeFileNamePattern: '{include}'
outputDirURI: '{output_dir}'
recordReaderSpec:
  dataFormat: '{data_format}'
  className: 'org.apache.pinot.plugin.inputformat.avro.AvroRecordReader'
tableSpec:
  tableName: airlineStats
  schemaURI: '{schema}'
  tableConfigURI: '{table_config}'
pinotClusterSpecs:
  - controllerURI: '{controller}'
"""


@pytest.fixture
def write_spec(tmp_path: Path, pinot_examples: Path):
    airline = pinot_examples / "batch/airlineStats"

    def write(**overrides: str) -> Path:
        fields = {
            "job_type": "SegmentCreation",
            "input_dir": str(airline / "rawdata"),
            "include": "glob:**/*.avro",
            "output_dir": str(tmp_path / "out"),
            "data_format": "avro",
            "schema": str(airline / "airlineStats_schema.json"),
            "table_config": str(airline / "airlineStats_offline_table_config.json"),
            "controller": "http://127.0.0.1:9",
        }
        fields.update(overrides)
        path = tmp_path / "job.yaml"
        path.write_text(SPEC.format(**fields))
        return path

    return write


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--no-progress", *argv])
    return code, capsys.readouterr().err


def test_missing_spec_file(capsys, tmp_path: Path) -> None:
    code, err = run_main(capsys, "--spec", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert err.strip() == f"ingest: job spec file '{tmp_path / 'missing.yaml'}' does not exist"


def test_invalid_yaml(capsys, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("jobType: {oops\n")
    code, err = run_main(capsys, "--spec", str(spec))
    assert code == 2
    assert "invalid YAML" in err and "Traceback" not in err


def test_unknown_job_type(capsys, write_spec) -> None:
    code, err = run_main(capsys, "--spec", str(write_spec(job_type="SegmentBake")))
    assert code == 2 and "unknown jobType 'SegmentBake'" in err


def test_unknown_data_format(capsys, write_spec) -> None:
    code, err = run_main(capsys, "--spec", str(write_spec(data_format="thrift")))
    assert code == 2 and "dataFormat 'thrift' is not supported" in err


def test_no_matching_input_files(capsys, write_spec) -> None:
    code, err = run_main(capsys, "--spec", str(write_spec(include="glob:**/*.parquet")))
    assert code == 2 and "no input file in" in err and "glob:**/*.parquet" in err


def test_missing_input_dir_override(capsys, write_spec, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    code, err = run_main(capsys, "--spec", str(write_spec()), "--input-dir", str(missing))
    assert code == 2 and f"input directory '{missing}' does not exist" in err


def test_missing_schema_file(capsys, write_spec, tmp_path: Path) -> None:
    code, err = run_main(capsys, "--spec", str(write_spec(schema=str(tmp_path / "no.json"))))
    assert code == 2 and "cannot read the schema file" in err


def test_invalid_schema_json(capsys, write_spec, tmp_path: Path) -> None:
    bad = tmp_path / "schema.json"
    bad.write_text(
        '{"schemaName": "x", "dimensionFieldSpecs": [{"name": "a", "dataType": "NOPE"}]}'
    )
    code, err = run_main(capsys, "--spec", str(write_spec(schema=str(bad))))
    assert code == 2 and "is not a valid Pinot schema" in err


def test_template_value_fills_the_spec(capsys, write_spec, tmp_path: Path) -> None:
    spec = write_spec(include="glob:**/${pattern}")
    code, err = run_main(capsys, "--spec", str(spec), "--values", "pattern=*.none")
    assert code == 2 and "glob:**/*.none" in err
    code, err = run_main(capsys, "--spec", str(spec), "--values", "no-equals-sign")
    assert code == 2 and "--values expects KEY=VALUE" in err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_controller_for_a_push_job(capsys, write_spec) -> None:
    controller = f"http://127.0.0.1:{closed_port()}"
    spec = write_spec(job_type="SegmentCreationAndTarPush")
    code, err = run_main(capsys, "--spec", str(spec), "--controller", controller)
    assert code == 2
    assert f"cannot fetch the table config from {controller}/tables/airlineStats" in err
    assert "connection refused" in err


def test_push_only_job_with_no_segments(capsys, write_spec, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    spec = write_spec(job_type="SegmentCreation")
    code, err = run_main(
        capsys, "--spec", str(spec), "--output-dir", str(tmp_path / "empty"),
        "--job-type", "SegmentCreation", "--input-dir", str(tmp_path / "empty"),
    )  # fmt: skip
    assert code == 2 and "no input file" in err


def test_sprig_ingest_reports_errors_as_one_line(capsys, tmp_path: Path) -> None:
    code = sprig_main(["ingest", "--no-progress", "--spec", str(tmp_path / "missing.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("sprig ingest: job spec file") and err.count("\n") == 1


def test_sprig_ingest_help_lists_the_options(capsys) -> None:
    with pytest.raises(SystemExit):
        sprig_main(["ingest", "--help"])
    out = capsys.readouterr().out
    for option in ("--spec", "--values", "--master", "--input-dir", "--controller"):
        assert option in out


def test_relative_paths_are_taken_from_root(capsys, pinot_examples, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(
        SPEC.format(
            job_type="SegmentCreation", input_dir="batch/airlineStats/rawdata",
            include="glob:**/*.none", output_dir="out", data_format="avro",
            schema="batch/airlineStats/airlineStats_schema.json",
            table_config="batch/airlineStats/airlineStats_offline_table_config.json",
            controller="http://127.0.0.1:9",
        )
    )  # fmt: skip
    code, err = run_main(capsys, "--spec", str(spec), "--root", str(pinot_examples))
    assert code == 2
    assert f"no input file in '{pinot_examples / 'batch/airlineStats/rawdata'}'" in err


def test_controller_override_moves_the_table_uris(pinot_examples: Path) -> None:
    import argparse

    from spark_jobs.ingestion.main import add_arguments, spec_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    spec_path = pinot_examples / "batch/airlineStats/ingestionJobSpec.yaml"
    args = parser.parse_args(
        ["--spec", str(spec_path), "--controller", "http://10.0.0.5:9100/", "--output-dir", "/o"]
    )
    spec = spec_from_args(args)
    assert spec.controller_uris == ("http://10.0.0.5:9100",)
    assert spec.table.schema_uri == "http://10.0.0.5:9100/tables/airlineStats/schema"
    assert spec.table.table_config_uri == "http://10.0.0.5:9100/tables/airlineStats"
    assert spec.output_dir_uri == "/o"
    assert spec.input_dir_uri == "examples/batch/airlineStats/rawdata"
