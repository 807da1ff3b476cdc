"""Pinot's batch ingestion job spec (`ingestionJobSpec.yaml`), read as Pinot reads it.

`load_job_spec(path, values)` renders Pinot's `${name}` template variables, parses the YAML and
returns a `JobSpec`. Field names and defaults follow Pinot's `SegmentGenerationJobSpec`; fields
that name Java classes (runners, record readers, file systems) are accepted and kept only for
the record, because the data format and URI scheme decide what actually runs here.
"""

from __future__ import annotations

import difflib
import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from spark_jobs.ingestion.errors import SpecError

SUPPORTED_DATA_FORMATS = ("avro", "csv", "json", "parquet")

# Pinot's reader class names, for specs that give only `className`.
_READER_CLASS_FORMATS = {
    "avrorecordreader": "avro",
    "csvrecordreader": "csv",
    "jsonrecordreader": "json",
    "parquetrecordreader": "parquet",
    "parquetnativerecordreader": "parquet",
    "parquetavrorecordreader": "parquet",
}


class JobType(enum.Enum):
    """Pinot's `PinotIngestionJobType`: what to create and how to push."""

    SEGMENT_CREATION = "SegmentCreation"
    SEGMENT_TAR_PUSH = "SegmentTarPush"
    SEGMENT_URI_PUSH = "SegmentUriPush"
    SEGMENT_METADATA_PUSH = "SegmentMetadataPush"
    SEGMENT_CREATION_AND_TAR_PUSH = "SegmentCreationAndTarPush"
    SEGMENT_CREATION_AND_URI_PUSH = "SegmentCreationAndUriPush"
    SEGMENT_CREATION_AND_METADATA_PUSH = "SegmentCreationAndMetadataPush"

    @property
    def creates_segments(self) -> bool:
        return self.value.startswith("SegmentCreation")

    @property
    def push_mode(self) -> str | None:
        """The upload type: TAR, URI or METADATA; None for creation only."""
        for mode in ("Tar", "Uri", "Metadata"):
            if self.value.endswith(f"{mode}Push"):
                return mode.upper()
        return None

    @classmethod
    def parse(cls, text: Any, where: str) -> JobType:
        for job_type in cls:
            if str(text).strip().lower() == job_type.value.lower():
                return job_type
        choices = ", ".join(t.value for t in cls)
        raise SpecError(f"{where}: unknown jobType {text!r}; expected one of {choices}")


@dataclass(frozen=True)
class RecordReaderSpec:
    data_format: str
    class_name: str | None = None
    config_class_name: str | None = None
    configs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TableSpec:
    table_name: str
    schema_uri: str | None = None
    table_config_uri: str | None = None


@dataclass(frozen=True)
class SegmentNameGeneratorSpec:
    type: str | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PushJobSpec:
    push_attempts: int = 1
    push_parallelism: int = 1
    push_retry_interval_millis: int = 1000
    segment_uri_prefix: str | None = None
    segment_uri_suffix: str | None = None
    push_file_name_pattern: str | None = None


@dataclass(frozen=True)
class JobSpec:
    """One ingestion job, with Pinot's defaults filled in."""

    job_type: JobType
    input_dir_uri: str | None
    output_dir_uri: str | None
    record_reader: RecordReaderSpec | None
    table: TableSpec
    include_file_name_pattern: str | None = None
    exclude_file_name_pattern: str | None = None
    search_recursively: bool = True
    overwrite_output: bool = False
    clean_up_output_dir: bool = False
    fail_on_empty_segment: bool = False
    segment_creation_job_parallelism: int = 0
    segment_name_generator: SegmentNameGeneratorSpec = field(
        default_factory=SegmentNameGeneratorSpec
    )
    controller_uris: tuple[str, ...] = ()
    push: PushJobSpec = field(default_factory=PushJobSpec)
    auth_token: str | None = None
    source: str = "<spec>"
    warnings: tuple[str, ...] = ()

    def with_overrides(self, **changes: Any) -> JobSpec:
        return replace(self, **changes)


_TOP_LEVEL_FIELDS = {
    "executionFrameworkSpec", "jobType", "inputDirURI", "searchRecursively",
    "includeFileNamePattern", "excludeFileNamePattern", "outputDirURI",
    "segmentCreationJobParallelism", "overwriteOutput", "pinotFSSpecs", "tableSpec",
    "recordReaderSpec", "segmentNameGeneratorSpec", "pinotClusterSpecs", "pushJobSpec",
    "cleanUpOutputDir", "tlsSpec", "failOnEmptySegment", "authToken", "createMetadataTarGz",
}  # fmt: skip

_TEMPLATE_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def render_template(text: str, values: Mapping[str, str], where: str) -> str:
    """Replace Pinot's `${name}` template variables with `values` (a missing one is an error)."""
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        if name in values:
            return str(values[name])
        missing.append(name)
        return match.group(0)

    rendered = _TEMPLATE_VARIABLE.sub(substitute, text)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        raise SpecError(
            f"{where}: template variable(s) {names} have no value; "
            f"pass them with --values NAME=VALUE or set them in the environment"
        )
    return rendered


def load_job_spec(
    path: str | os.PathLike[str],
    values: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> JobSpec:
    """Read, render and parse a job spec file.

    Template variables come from `environ` (default: the process environment) overridden by
    `values`, as Pinot's launcher does with `-values`.
    """
    spec_path = Path(path)
    if not spec_path.is_file():
        raise SpecError(f"job spec file {str(spec_path)!r} does not exist")
    try:
        text = spec_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read job spec file {str(spec_path)!r}: {exc}") from exc
    context = {**(os.environ if environ is None else environ), **(values or {})}
    where = str(spec_path)
    return parse_job_spec(render_template(text, context, where), where)


def parse_job_spec(text: str, where: str = "<spec>") -> JobSpec:
    """Parse the YAML text of a (rendered) job spec."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{where}: invalid YAML: {_one_line(exc)}") from exc
    if not isinstance(document, dict):
        raise SpecError(
            f"{where}: a job spec must be a YAML mapping, got {type(document).__name__}"
        )
    return job_spec_from_dict(document, where)


def job_spec_from_dict(doc: Mapping[str, Any], where: str = "<spec>") -> JobSpec:
    warnings = [_unknown_field_warning(key, _TOP_LEVEL_FIELDS, where) for key in doc]
    if "jobType" not in doc:
        raise SpecError(f"{where}: missing field 'jobType'")
    job_type = JobType.parse(doc["jobType"], where)
    table_doc = _mapping(doc, "tableSpec", where)
    if not table_doc or not table_doc.get("tableName"):
        raise SpecError(f"{where}: missing field 'tableSpec.tableName'")
    reader = _record_reader(doc, where) if job_type.creates_segments else None
    naming = _mapping(doc, "segmentNameGeneratorSpec", where)
    push = _mapping(doc, "pushJobSpec", where)
    spec = JobSpec(
        job_type=job_type,
        input_dir_uri=_text(doc.get("inputDirURI")),
        output_dir_uri=_text(doc.get("outputDirURI")),
        record_reader=reader,
        table=TableSpec(
            table_name=str(table_doc["tableName"]),
            schema_uri=_text(table_doc.get("schemaURI")),
            table_config_uri=_text(table_doc.get("tableConfigURI")),
        ),
        include_file_name_pattern=_text(doc.get("includeFileNamePattern")),
        exclude_file_name_pattern=_text(doc.get("excludeFileNamePattern")),
        search_recursively=_bool(doc, "searchRecursively", True, where),
        overwrite_output=_bool(doc, "overwriteOutput", False, where),
        clean_up_output_dir=_bool(doc, "cleanUpOutputDir", False, where),
        fail_on_empty_segment=_bool(doc, "failOnEmptySegment", False, where),
        segment_creation_job_parallelism=_int(doc, "segmentCreationJobParallelism", 0, where),
        segment_name_generator=SegmentNameGeneratorSpec(
            type=_text(naming.get("type")),
            configs={
                str(k): str(v) for k, v in (naming.get("configs") or {}).items() if v is not None
            },
        ),
        controller_uris=_controller_uris(doc, where),
        push=PushJobSpec(
            push_attempts=max(1, _int(push, "pushAttempts", 1, where)),
            push_parallelism=max(1, _int(push, "pushParallelism", 1, where)),
            push_retry_interval_millis=max(0, _int(push, "pushRetryIntervalMillis", 1000, where)),
            segment_uri_prefix=_text(push.get("segmentUriPrefix")),
            segment_uri_suffix=_text(push.get("segmentUriSuffix")),
            push_file_name_pattern=_text(push.get("pushFileNamePattern")),
        ),
        auth_token=_text(doc.get("authToken")),
        source=where,
        warnings=tuple(w for w in warnings if w),
    )
    _check_required(spec)
    return spec


def _check_required(spec: JobSpec) -> None:
    where = spec.source
    if spec.job_type.creates_segments and not spec.input_dir_uri:
        raise SpecError(f"{where}: jobType {spec.job_type.value} needs 'inputDirURI'")
    if not spec.output_dir_uri:
        raise SpecError(f"{where}: jobType {spec.job_type.value} needs 'outputDirURI'")
    if spec.job_type.push_mode and not spec.controller_uris:
        raise SpecError(
            f"{where}: jobType {spec.job_type.value} pushes segments and needs "
            f"'pinotClusterSpecs' with at least one 'controllerURI'"
        )


def _record_reader(doc: Mapping[str, Any], where: str) -> RecordReaderSpec:
    reader = _mapping(doc, "recordReaderSpec", where)
    if not reader:
        raise SpecError(f"{where}: missing field 'recordReaderSpec'")
    class_name = _text(reader.get("className"))
    data_format = _text(reader.get("dataFormat"))
    if data_format is None and class_name:
        data_format = _READER_CLASS_FORMATS.get(class_name.rsplit(".", 1)[-1].lower())
    if data_format is None:
        raise SpecError(f"{where}: missing field 'recordReaderSpec.dataFormat'")
    data_format = data_format.lower()
    if data_format not in SUPPORTED_DATA_FORMATS:
        raise SpecError(
            f"{where}: recordReaderSpec.dataFormat {data_format!r} is not supported; "
            f"supported formats: {', '.join(SUPPORTED_DATA_FORMATS)}"
        )
    configs = reader.get("configs") or {}
    if not isinstance(configs, dict):
        raise SpecError(f"{where}: 'recordReaderSpec.configs' must be a mapping")
    return RecordReaderSpec(
        data_format=data_format,
        class_name=class_name,
        config_class_name=_text(reader.get("configClassName")),
        configs=dict(configs),
    )


def _controller_uris(doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
    clusters = doc.get("pinotClusterSpecs") or []
    if not isinstance(clusters, list):
        raise SpecError(f"{where}: 'pinotClusterSpecs' must be a list")
    uris = []
    for index, cluster in enumerate(clusters):
        uri = _text(cluster.get("controllerURI")) if isinstance(cluster, dict) else None
        if not uri:
            raise SpecError(f"{where}: pinotClusterSpecs[{index}] has no 'controllerURI'")
        uris.append(uri.rstrip("/"))
    return tuple(uris)


def _mapping(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{where}: '{key}' must be a mapping, got {type(value).__name__}")
    return value


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _bool(doc: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = doc.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise SpecError(f"{where}: '{key}' must be true or false, got {value!r}")


def _int(doc: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = doc.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{where}: '{key}' must be an integer, got {value!r}") from None


def _unknown_field_warning(key: str, known: set[str], where: str) -> str | None:
    if key in known:
        return None
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"{where}: ignoring unknown field '{key}'{hint}"


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
