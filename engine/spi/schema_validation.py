"""Pinot's own schema rules (its ``SchemaUtils.validate`` and ``Schema.validate``).

``Schema.from_json`` reads any schema the engine can store; this adds the rules Pinot's
controller applies before it accepts one, so the controller refuses what Pinot refuses.
"""

from __future__ import annotations

from engine.common.errors import ConfigError
from engine.spi.datetime_format import DateTimeFormat
from engine.spi.schema import Schema

_SECTIONS = ("dimensionFieldSpecs", "metricFieldSpecs", "dateTimeFieldSpecs")
# A metric is aggregated, so Pinot stores it as a number or bytes, never as a string.
_STRING_TYPES = {"STRING", "JSON"}
_PATTERN_ORDER = "yMdHmsS"


def validate_schema(schema: Schema) -> None:
    """Raise ConfigError naming the first field Pinot would refuse."""
    raw = schema.to_json()
    for section in _SECTIONS:
        for i, spec in enumerate(raw.get(section) or []):
            _check_field(section, i, spec)


def _check_field(section: str, i: int, spec: dict) -> None:
    path = f"{section}[{i}]"
    name = spec["name"]
    if any(c.isspace() for c in name):
        raise ConfigError(
            f"{path}.name", f"the column name {name!r} should not contain blank space"
        )
    data_type = str(spec.get("dataType", "")).upper()
    if section == "metricFieldSpecs" and data_type in _STRING_TYPES:
        raise ConfigError(
            f"{path}.dataType", f"unsupported data type {data_type} in METRIC field {name!r}"
        )
    if data_type in ("FLOAT", "DOUBLE") and str(spec.get("defaultNullValue")) == "NaN":
        raise ConfigError(
            f"{path}.defaultNullValue",
            f"NaN as the default null value of {name!r} is not supported",
        )
    if section == "dateTimeFieldSpecs":
        _check_sortable_pattern(
            DateTimeFormat.parse(spec.get("format"), f"{path}.format").pattern, path
        )


def _check_sortable_pattern(pattern: str | None, path: str) -> None:
    """A SIMPLE_DATE_FORMAT pattern must order its fields year, month, day, hour, minute,
    second, millisecond, so that its strings sort as the times do. Letters inside quotes count,
    as they do in Pinot's check."""
    if not pattern:
        return
    last = [-1] * len(_PATTERN_ORDER)
    for pos, ch in enumerate(pattern):
        if ch in _PATTERN_ORDER:
            last[_PATTERN_ORDER.index(ch)] = pos
    for i in range(len(_PATTERN_ORDER) - 1):
        if last[i + 1] != -1 and last[i] > last[i + 1]:
            raise ConfigError(
                f"{path}.format",
                f"SIMPLE_DATE_FORMAT pattern {pattern!r} has to be sorted by both lexicographical "
                "and datetime order (yyyy MM dd HH mm ss SSS)",
            )
        last[i + 1] = max(last[i + 1], last[i])


# Pinot's Schema and FieldSpec JSON properties.
_SCHEMA_KEYS = {
    "schemaName", "dimensionFieldSpecs", "metricFieldSpecs", "dateTimeFieldSpecs",
    "timeFieldSpec", "complexFieldSpecs", "primaryKeyColumns", "enableColumnBasedNullHandling",
    "description", "tags",
}  # fmt: skip
_FIELD_KEYS = {
    "name", "dataType", "fieldType", "singleValueField", "defaultNullValue", "notNull",
    "maxLength", "maxLengthExceedStrategy", "transformFunction", "virtualColumnProvider",
    "allowTrailingZeros", "format", "granularity", "sampleValue", "incomingGranularitySpec",
    "outgoingGranularitySpec", "childFieldSpecs", "description", "tags",
}  # fmt: skip


def schema_unrecognized_properties(raw: dict) -> dict:
    """Keys of a schema that Pinot's Schema/FieldSpec do not have, as ``{json_pointer: value}``
    (Pinot's ``unrecognizedProperties``); they are kept as given."""
    out = {f"/{k}": v for k, v in raw.items() if k not in _SCHEMA_KEYS}
    for section in (*_SECTIONS, "complexFieldSpecs"):
        for i, spec in enumerate(raw.get(section) or []):
            if isinstance(spec, dict):
                out |= {f"/{section}/{i}/{k}": v for k, v in spec.items() if k not in _FIELD_KEYS}
    time_spec = raw.get("timeFieldSpec")
    if isinstance(time_spec, dict):
        out |= {f"/timeFieldSpec/{k}": v for k, v in time_spec.items() if k not in _FIELD_KEYS}
    return out
