"""Pinot schemas: ``dimensionFieldSpecs``, ``metricFieldSpecs``, ``dateTimeFieldSpecs`` and the
legacy ``timeFieldSpec``, read from Pinot's JSON unchanged and written back the same way."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import orjson

from engine.common.errors import ConfigError
from engine.common.names import InvalidNameError, check_table_name
from engine.common.types import DataType, FieldType
from engine.spi.datetime_format import DateTimeFormat
from engine.spi.table_config_model import as_bool

_SECTIONS = (
    ("dimensionFieldSpecs", FieldType.DIMENSION),
    ("metricFieldSpecs", FieldType.METRIC),
    ("dateTimeFieldSpecs", FieldType.DATE_TIME),
)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """One column. ``default_null_value`` is in stored form (see DataType.to_stored); ``format``
    and ``granularity`` are set for DATE_TIME/TIME fields."""

    name: str
    data_type: DataType
    field_type: FieldType
    single_value: bool = True
    default_null_value: Any = None
    format: str | None = None
    granularity: str | None = None
    max_length: int = 512
    transform_function: str | None = None
    not_null: bool = False  # ``notNull``: never null under column-based null handling

    @property
    def is_time(self) -> bool:
        return self.field_type in (FieldType.DATE_TIME, FieldType.TIME)

    @property
    def datetime_format(self) -> DateTimeFormat | None:
        """The parsed ``format`` of a date-time field, else None."""
        return DateTimeFormat.parse(self.format, self.name) if self.format else None


def _load_json(data: dict | str | bytes, what: str) -> dict:
    if isinstance(data, dict):
        return copy.deepcopy(data)
    try:
        loaded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError("", f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ConfigError("", f"{what} must be a JSON object, got {type(loaded).__name__}")
    return loaded


def _field_from_json(spec: Any, path: str, field_type: FieldType) -> FieldSpec:
    if not isinstance(spec, dict):
        raise ConfigError(path, "a field spec must be a JSON object")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.name", "a field needs a non-empty string name")
    try:
        data_type = DataType.parse(spec.get("dataType", ""))
    except ValueError:
        raise ConfigError(
            f"{path}.dataType",
            f"unknown data type {spec.get('dataType')!r} for {name!r}; "
            f"expected one of {', '.join(t.value for t in DataType)}",
        ) from None
    single = spec.get("singleValueField", True)
    if not isinstance(single, bool):
        raise ConfigError(f"{path}.singleValueField", f"expected true/false, got {single!r}")
    if not single and field_type is not FieldType.DIMENSION:
        raise ConfigError(f"{path}.singleValueField", "only dimensions can be multi-value")
    default = data_type.default_null_value(field_type)
    if spec.get("defaultNullValue") is not None:
        try:
            default = data_type.to_stored(spec["defaultNullValue"])
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise ConfigError(
                f"{path}.defaultNullValue", f"{spec['defaultNullValue']!r} is not a {data_type}"
            ) from exc
    fmt = spec.get("format")
    granularity = spec.get("granularity")
    if field_type is FieldType.DATE_TIME:
        DateTimeFormat.parse(fmt, f"{path}.format")
        if granularity is not None and not isinstance(granularity, str):
            raise ConfigError(f"{path}.granularity", "expected a string such as '1:HOURS'")
    not_null = as_bool(spec.get("notNull"), f"{path}.notNull")  # Pinot reads "true" too
    max_length = spec.get("maxLength", 512)
    if not isinstance(max_length, int) or max_length <= 0:
        raise ConfigError(f"{path}.maxLength", f"expected a positive integer, got {max_length!r}")
    return FieldSpec(
        name=name,
        data_type=data_type,
        field_type=field_type,
        single_value=single,
        default_null_value=default,
        format=fmt,
        granularity=granularity,
        max_length=max_length,
        transform_function=spec.get("transformFunction"),
        not_null=not_null,
    )


def _time_field_from_json(spec: Any) -> FieldSpec:
    path = "timeFieldSpec"
    if not isinstance(spec, dict):
        raise ConfigError(path, "timeFieldSpec must be a JSON object")
    granularity = spec.get("outgoingGranularitySpec") or spec.get("incomingGranularitySpec")
    key = (
        "outgoingGranularitySpec"
        if spec.get("outgoingGranularitySpec")
        else "incomingGranularitySpec"
    )
    if not isinstance(granularity, dict):
        raise ConfigError(
            f"{path}.incomingGranularitySpec", "a time field needs a granularity spec"
        )
    unit = str(granularity.get("timeType", "MILLISECONDS")).upper()
    size = granularity.get("timeUnitSize", 1)
    time_format = str(granularity.get("timeFormat", "EPOCH"))
    if time_format.upper() == "EPOCH":
        fmt = f"{size}:{unit}:EPOCH"
    else:  # e.g. SIMPLE_DATE_FORMAT:yyyyMMdd
        fmt = f"{size}:{unit}:{time_format}"
    merged = {**granularity, "format": fmt, "granularity": f"{size}:{unit}"}
    if "defaultNullValue" in spec:
        merged["defaultNullValue"] = spec["defaultNullValue"]
    return _field_from_json(merged, f"{path}.{key}", FieldType.TIME)


class Schema:
    """A table schema. ``columns`` keeps the JSON order (dimensions, metrics, date-times, time)."""

    def __init__(self, name: str, fields: list[FieldSpec], raw: dict):
        self.name = name
        self._fields = {f.name: f for f in fields}
        self._raw = raw
        self.primary_key_columns: list[str] = list(raw.get("primaryKeyColumns") or [])

    @classmethod
    def from_json(cls, data: dict | str | bytes) -> Schema:
        """Read a Pinot schema; raises ConfigError naming the bad field."""
        raw = _load_json(data, "schema")
        name = raw.get("schemaName")
        if not isinstance(name, str) or not name:
            raise ConfigError("schemaName", "a schema needs a non-empty schemaName")
        try:
            check_table_name(name, "schema")  # it names a znode, as a table name does
        except InvalidNameError as exc:
            raise ConfigError("schemaName", str(exc)) from None
        fields: list[FieldSpec] = []
        for key, field_type in _SECTIONS:
            specs = raw.get(key) or []
            if not isinstance(specs, list):
                raise ConfigError(key, "expected a list of field specs")
            fields.extend(
                _field_from_json(spec, f"{key}[{i}]", field_type) for i, spec in enumerate(specs)
            )
        if raw.get("timeFieldSpec"):
            fields.append(_time_field_from_json(raw["timeFieldSpec"]))
        seen: set[str] = set()
        for spec in fields:
            if spec.name in seen:
                raise ConfigError(spec.name, f"column {spec.name!r} is defined more than once")
            seen.add(spec.name)
        as_bool(raw.get("enableColumnBasedNullHandling"), "enableColumnBasedNullHandling")
        for i, pk in enumerate(raw.get("primaryKeyColumns") or []):
            if pk not in seen:
                raise ConfigError(f"primaryKeyColumns[{i}]", f"{pk!r} is not a column")
        return cls(name, fields, raw)

    def to_json(self) -> dict:
        """The schema as Pinot JSON (the original document, unknown keys included)."""
        return copy.deepcopy(self._raw)

    @property
    def ignored_keys(self) -> list[str]:
        """Top-level keys that are kept but that nothing in Sprig acts on (e.g.
        ``complexFieldSpecs``)."""
        known = {
            "schemaName",
            "primaryKeyColumns",
            "enableColumnBasedNullHandling",
            "timeFieldSpec",
        }
        known |= {key for key, _ in _SECTIONS}
        return [k for k in self._raw if k not in known]

    def nullable_columns(self, table_null_handling: bool) -> frozenset[str]:
        """The columns whose nulls are stored (a null value vector beside the default value),
        as Pinot decides: with the schema's ``enableColumnBasedNullHandling`` every column not
        marked ``notNull``; otherwise every column when the table config's
        ``tableIndexConfig.nullHandlingEnabled`` (``table_null_handling``) is set, else none."""
        if as_bool(self._raw.get("enableColumnBasedNullHandling"), "enableColumnBasedNullHandling"):
            return frozenset(f.name for f in self._fields.values() if not f.not_null)
        return frozenset(self._fields) if table_null_handling else frozenset()

    @property
    def columns(self) -> list[str]:
        return list(self._fields)

    @property
    def fields(self) -> list[FieldSpec]:
        return list(self._fields.values())

    def field(self, name: str) -> FieldSpec:
        """The spec of ``name``; raises KeyError for an unknown column."""
        return self._fields[name]

    def has_column(self, name: str) -> bool:
        return name in self._fields

    @property
    def time_column_name(self) -> str | None:
        """The legacy TIME column, else the first DATE_TIME column, else None. A table's
        ``segmentsConfig.timeColumnName`` takes precedence over this."""
        for spec in self._fields.values():
            if spec.field_type is FieldType.TIME:
                return spec.name
        for spec in self._fields.values():
            if spec.field_type is FieldType.DATE_TIME:
                return spec.name
        return None

    def __repr__(self) -> str:
        return f"Schema({self.name!r}, {len(self._fields)} columns)"
