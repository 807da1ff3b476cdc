"""Segment names, as Pinot's segment name generators make them.

All generators join their non-empty parts with '_':
- `simple` (the default): prefix (segment.name.prefix, else the table name with its type, e.g.
  `airlineStats_OFFLINE`, as Pinot's jobs use), the segment's min
  and max raw time values (when the table has a time column), segment.name.postfix, and the
  sequence id.
- `normalizedDate`: prefix (the same default), then for APPEND tables the min and max time as `yyyy-MM-dd`
  (`yyyy-MM-dd-HH` when the push frequency is hourly), postfix, and the sequence id unless
  `exclude.sequence.id` is true. REFRESH tables get no dates.
- `fixed`: the `segment.name` config as it is.
- `inputFile`: `file.path.pattern` (a regex that must match the whole input file path) and
  `segment.name.template` with `${filePathPattern:\\N}` for group N; without a match, the
  file path with '/' and '.' replaced by '_'.
`append.uuid.to.segment.name: true` adds a random UUID to simple and normalizedDate names.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from engine.common.errors import ConfigError
from engine.spi.table_name import raw_name_for_type, table_name_with_type
from spark_jobs.ingestion.errors import SpecError

SIMPLE, NORMALIZED_DATE, FIXED, INPUT_FILE = "simple", "normalizedDate", "fixed", "inputFile"
_TYPES = {t.lower(): t for t in (SIMPLE, NORMALIZED_DATE, FIXED, INPUT_FILE)}
# Characters Pinot refuses in a segment name (they break paths and ZooKeeper node names).
_INVALID_NAME_CHARS = re.compile(r"[/\\*?\"<>|\t\n\r]")


@dataclass(frozen=True)
class TimeColumn:
    """The table's time column: its name and Pinot date-time format string (e.g. 1:DAYS:EPOCH)."""

    name: str
    format: str | None


@dataclass(frozen=True)
class SegmentNamer:
    """Names segments for one job. Build it with `SegmentNamer.create`; it is picklable so
    Spark executors can use it."""

    type: str
    table_name: str  # with its type suffix, e.g. airlineStats_OFFLINE
    configs: Mapping[str, str]
    time_column: TimeColumn | None = None
    push_type: str | None = None
    push_frequency: str | None = None

    @classmethod
    def create(
        cls,
        generator_type: str | None,
        configs: Mapping[str, str],
        table_config: Mapping[str, Any],
        schema: Mapping[str, Any],
    ) -> SegmentNamer:
        """Validate the naming spec against the table config and schema (both Pinot JSON)."""
        kind = _TYPES.get((generator_type or SIMPLE).lower())
        if kind is None:
            raise SpecError(
                f"segmentNameGeneratorSpec.type {generator_type!r} is not supported; "
                f"expected one of {', '.join(_TYPES.values())}"
            )
        table_type = str(table_config.get("tableType") or "OFFLINE").upper()
        try:
            raw_name = raw_name_for_type(str(table_config.get("tableName") or ""), table_type)
        except ConfigError as exc:
            raise SpecError(f"tableConfig.{exc}") from None
        segments_config = table_config.get("segmentsConfig") or {}
        batch_config = (table_config.get("ingestionConfig") or {}).get("batchIngestionConfig") or {}
        namer = cls(
            type=kind,
            table_name=table_name_with_type(raw_name, table_type),
            configs=dict(configs),
            time_column=_time_column(segments_config.get("timeColumnName"), schema),
            push_type=batch_config.get("segmentIngestionType")
            or segments_config.get("segmentPushType"),
            push_frequency=batch_config.get("segmentIngestionFrequency")
            or segments_config.get("segmentPushFrequency"),
        )
        namer._check()
        return namer

    def _check(self) -> None:
        if self.type == FIXED and not self.configs.get("segment.name"):
            raise SpecError("segmentNameGeneratorSpec type 'fixed' needs configs.segment.name")
        if self.type == INPUT_FILE:
            for key in ("file.path.pattern", "segment.name.template"):
                if not self.configs.get(key):
                    raise SpecError(
                        f"segmentNameGeneratorSpec type 'inputFile' needs configs.{key}"
                    )
            try:
                re.compile(self.configs["file.path.pattern"])
            except re.error as exc:
                raise SpecError(f"segmentNameGeneratorSpec file.path.pattern: {exc}") from exc
        needs_time_format = self.type == NORMALIZED_DATE and self._appends_dates
        if needs_time_format and (self.time_column is None or not self.time_column.format):
            raise SpecError(
                "segmentNameGeneratorSpec type 'normalizedDate' for an APPEND table needs the "
                "table's segmentsConfig.timeColumnName to be a date-time column of the schema"
            )
        for key in ("segment.name.prefix", "segment.name.postfix"):
            if key in self.configs:
                _check_name_part(self.configs[key], key)

    @property
    def uses_time(self) -> bool:
        """Whether names need the segment's min/max time values."""
        if self.type == SIMPLE:
            return self.time_column is not None
        return self.type == NORMALIZED_DATE and self._appends_dates

    @property
    def _appends_dates(self) -> bool:
        return str(self.push_type or "").upper() == "APPEND"

    def name(
        self,
        sequence_id: int,
        min_time: Any = None,
        max_time: Any = None,
        input_file_uri: str | None = None,
    ) -> str:
        """The segment name. `sequence_id` < 0 means none; `min_time`/`max_time` are raw values
        of the time column (None when the segment has no time values)."""
        sequence = sequence_id if sequence_id >= 0 else None
        suffix_uuid = uuid.uuid4() if self._append_uuid else None
        prefix = self.configs.get("segment.name.prefix", self.table_name).strip()
        postfix = self.configs.get("segment.name.postfix")
        if self.type == FIXED:
            name = self.configs["segment.name"]
        elif self.type == INPUT_FILE:
            name = self._from_input_file(input_file_uri, sequence_id)
        elif self.type == SIMPLE:
            times = (min_time, max_time) if self.time_column else (None, None)
            name = _join(prefix, *times, postfix, sequence, suffix_uuid)
        else:
            if self.configs.get("exclude.sequence.id", "").lower() == "true":
                sequence = None
            if self._appends_dates:
                if min_time is None or max_time is None:
                    raise SpecError(
                        f"cannot name the segment with normalizedDate: the time column "
                        f"{self.time_column.name!r} has no values"
                    )
                dates = (self._normalized_date(min_time), self._normalized_date(max_time))
            else:
                dates = (None, None)
            name = _join(prefix, *dates, postfix, sequence, suffix_uuid)
        _check_name_part(name, "segment name")
        return name

    @property
    def _append_uuid(self) -> bool:
        appendable = self.type in (SIMPLE, NORMALIZED_DATE)
        return appendable and self.configs.get("append.uuid.to.segment.name", "").lower() == "true"

    def _normalized_date(self, value: Any) -> str:
        import pyarrow as pa

        from engine.spi.datetime_format import DateTimeFormat, format_java_datetime

        hourly = str(self.push_frequency or "").lower() == "hourly"
        time_format = DateTimeFormat.parse(self.time_column.format, self.time_column.name)
        try:
            millis = time_format.to_millis(pa.array([value]))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SpecError(
                f"time value {value!r} of column {self.time_column.name!r} does not match its "
                f"format {self.time_column.format!r}"
            ) from exc
        return format_java_datetime(millis, "yyyy-MM-dd-HH" if hourly else "yyyy-MM-dd")[0].as_py()

    def _from_input_file(self, input_file_uri: str | None, sequence_id: int) -> str:
        if input_file_uri is None:
            return "InvalidInputFilePath" + (f"_{sequence_id}" if sequence_id >= 0 else "")
        path = unquote(urlparse(input_file_uri).path) or input_file_uri
        match = re.fullmatch(self.configs["file.path.pattern"], path)
        if match is None:
            return re.sub(r"[/.]", "_", path.lstrip("/"))
        name = self.configs["segment.name.template"]
        for group in range(1, (match.re.groups or 0) + 1):
            name = name.replace(f"${{filePathPattern:\\{group}}}", match.group(group) or "")
        return name


def _join(*parts: Any) -> str:
    return "_".join(str(part) for part in parts if part is not None and str(part) != "")


def _check_name_part(text: str, what: str) -> None:
    bad = _INVALID_NAME_CHARS.search(text)
    if bad:
        raise SpecError(f"{what} {text!r} contains the invalid character {bad.group(0)!r}")


def _time_column(name: str | None, schema: Mapping[str, Any]) -> TimeColumn | None:
    if not name:
        return None
    for spec in schema.get("dateTimeFieldSpecs") or []:
        if spec.get("name") == name:
            return TimeColumn(name, spec.get("format"))
    legacy = schema.get("timeFieldSpec") or {}
    incoming = legacy.get("outgoingGranularitySpec") or legacy.get("incomingGranularitySpec") or {}
    if incoming.get("name") == name:
        unit = incoming.get("timeType", "MILLISECONDS")
        size = incoming.get("timeUnitSize", 1)
        time_format = incoming.get("timeFormat", "EPOCH")
        if time_format.upper() == "EPOCH":
            return TimeColumn(name, f"{size}:{unit}:EPOCH")
        return TimeColumn(name, f"{size}:{unit}:{time_format}")
    return TimeColumn(name, None)
