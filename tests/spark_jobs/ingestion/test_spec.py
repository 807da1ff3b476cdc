from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.ingestion.errors import SpecError
from spark_jobs.ingestion.spec import JobType, load_job_spec, parse_job_spec, render_template

MINIMAL = """
jobType: SegmentCreation
inputDirURI: in
outputDirURI: out
recordReaderSpec: {dataFormat: csv}
tableSpec: {tableName: t, schemaURI: s.json, tableConfigURI: t.json}
"""


def test_airline_stats_example_spec(pinot_examples: Path) -> None:
    spec = load_job_spec(pinot_examples / "batch/airlineStats/ingestionJobSpec.yaml", environ={})
    assert spec.job_type is JobType.SEGMENT_CREATION_AND_TAR_PUSH
    assert spec.job_type.creates_segments and spec.job_type.push_mode == "TAR"
    assert spec.input_dir_uri == "examples/batch/airlineStats/rawdata"
    assert spec.output_dir_uri == "examples/batch/airlineStats/segments"
    assert spec.include_file_name_pattern == "glob:**/*.avro"
    assert spec.exclude_file_name_pattern is None
    assert spec.search_recursively is True
    assert spec.overwrite_output is True
    assert spec.segment_creation_job_parallelism == 4
    assert spec.record_reader.data_format == "avro"
    assert spec.record_reader.class_name.endswith("AvroRecordReader")
    assert spec.table.table_name == "airlineStats"
    assert spec.table.schema_uri == "http://localhost:9000/tables/airlineStats/schema"
    assert spec.table.table_config_uri == "http://localhost:9000/tables/airlineStats"
    assert spec.controller_uris == ("http://localhost:9000",)
    assert spec.push.push_attempts == 2
    assert spec.push.push_retry_interval_millis == 1000
    assert spec.push.push_parallelism == 1
    assert spec.segment_name_generator.type is None
    assert spec.warnings == ()


def test_billing_example_spec_with_empty_csv_configs(pinot_examples: Path) -> None:
    spec = load_job_spec(pinot_examples / "batch/billing/ingestionJobSpec.yaml", environ={})
    assert spec.record_reader.data_format == "csv"
    assert spec.record_reader.config_class_name.endswith("CSVRecordReaderConfig")
    assert spec.record_reader.configs == {}
    assert spec.include_file_name_pattern == "glob:**/*.csv"
    assert spec.table.table_name == "billing"


def test_spark_example_spec_naming_and_push(pinot_examples: Path) -> None:
    spec = load_job_spec(
        pinot_examples / "batch/airlineStats/sparkIngestionJobSpec.yaml", environ={}
    )
    assert spec.segment_name_generator.type == "normalizedDate"
    assert spec.segment_name_generator.configs == {
        "segment.name.prefix": "airlineStats_batch",
        "exclude.sequence.id": "True",
    }
    assert spec.push.push_parallelism == 2


def test_csv_configs_pass_through() -> None:
    text = MINIMAL.replace(
        "{dataFormat: csv}",
        "{dataFormat: CSV, className: x.CSVRecordReader, configs: {delimiter: ';', header: 'a;b'}}",
    )
    reader = parse_job_spec(text).record_reader
    assert reader.data_format == "csv"
    assert reader.configs == {"delimiter": ";", "header": "a;b"}


def test_data_format_from_class_name_only() -> None:
    text = MINIMAL.replace(
        "{dataFormat: csv}",
        "{className: org.apache.pinot.plugin.inputformat.parquet.ParquetNativeRecordReader}",
    )
    assert parse_job_spec(text).record_reader.data_format == "parquet"


def test_template_values_override_environment(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(MINIMAL.replace("inputDirURI: in", "inputDirURI: '${base}/${day}'"))
    spec = load_job_spec(path, values={"day": "01"}, environ={"base": "/data", "day": "99"})
    assert spec.input_dir_uri == "/data/01"


def test_missing_template_value_is_named(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(MINIMAL.replace("inputDirURI: in", "inputDirURI: '${base}/x'"))
    with pytest.raises(SpecError, match=r"base.*--values"):
        load_job_spec(path, environ={})


def test_render_template_leaves_plain_dollars() -> None:
    assert render_template("a: $x ${y}", {"y": "1"}, "f") == "a: $x 1"


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml.*does not exist"):
        load_job_spec(tmp_path / "nope.yaml")


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("jobType: [unclosed\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: invalid YAML"):
        load_job_spec(path, environ={})


def test_yaml_that_is_not_a_mapping() -> None:
    with pytest.raises(SpecError, match="must be a YAML mapping"):
        parse_job_spec("- a\n- b\n")


def test_unknown_job_type_lists_the_valid_ones() -> None:
    with pytest.raises(
        SpecError, match=r"unknown jobType 'SegmentBake'.*SegmentCreationAndTarPush"
    ):
        parse_job_spec(MINIMAL.replace("SegmentCreation", "SegmentBake"))


def test_job_type_is_case_insensitive() -> None:
    spec = parse_job_spec(MINIMAL.replace("SegmentCreation", "segmentcreation"))
    assert spec.job_type is JobType.SEGMENT_CREATION


def test_unknown_data_format() -> None:
    with pytest.raises(SpecError, match=r"dataFormat 'orc' is not supported.*avro, csv, json"):
        parse_job_spec(MINIMAL.replace("dataFormat: csv", "dataFormat: orc"))


def test_missing_required_fields() -> None:
    with pytest.raises(SpecError, match=r"tableSpec\.tableName"):
        parse_job_spec(MINIMAL.replace("tableName: t, ", ""))
    with pytest.raises(SpecError, match="needs 'inputDirURI'"):
        parse_job_spec(MINIMAL.replace("inputDirURI: in\n", ""))
    with pytest.raises(SpecError, match="recordReaderSpec"):
        parse_job_spec(MINIMAL.replace("recordReaderSpec: {dataFormat: csv}\n", ""))


def test_push_job_needs_a_controller() -> None:
    with pytest.raises(SpecError, match="pinotClusterSpecs"):
        parse_job_spec(MINIMAL.replace("SegmentCreation", "SegmentTarPush"))


def test_push_only_job_needs_no_reader() -> None:
    text = MINIMAL.replace("SegmentCreation", "SegmentUriPush").replace(
        "recordReaderSpec: {dataFormat: csv}\n",
        "pinotClusterSpecs: [{controllerURI: 'http://c:9000/'}]\n",
    )
    spec = parse_job_spec(text)
    assert spec.record_reader is None
    assert spec.controller_uris == ("http://c:9000",)


def test_bad_field_types() -> None:
    with pytest.raises(SpecError, match="'overwriteOutput' must be true or false"):
        parse_job_spec(MINIMAL + "overwriteOutput: sometimes\n")
    with pytest.raises(SpecError, match="'pushAttempts' must be an integer"):
        parse_job_spec(MINIMAL + "pushJobSpec: {pushAttempts: many}\n")


def test_unknown_field_is_a_warning_with_a_suggestion() -> None:
    spec = parse_job_spec(MINIMAL + "overwriteOutputs: true\n", "job.yaml")
    assert spec.warnings == (
        "job.yaml: ignoring unknown field 'overwriteOutputs' (did you mean 'overwriteOutput'?)",
    )
