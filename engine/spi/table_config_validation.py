"""Pinot's own table-config rules (its ``TableConfigUtils.validate``), checked against the schema.

What Pinot rejects is rejected here with the same meaning, naming the JSON field at fault; what
Pinot accepts is accepted. Keys Sprig does not implement are reported (``TableConfig.warnings``)
rather than refused.
"""

from __future__ import annotations

import re

from engine.common.errors import ConfigError
from engine.common.names import InvalidNameError, check_table_name
from engine.spi.datetime_format import UNIT_MILLIS
from engine.spi.schema import Schema
from engine.spi.table_config_index_checks import validate_indexing, validate_upsert_and_dedup

_UPSERT_ROUTING = {"strictreplicagroup", "multistagereplicagroup"}
_PERIOD = re.compile(r"^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$", re.IGNORECASE)
_SERVER_TAG = re.compile(r"^.+_(OFFLINE|REALTIME)$")


def _column(schema: Schema, column: str, path: str, what: str = "column"):
    if not schema.has_column(column):
        raise ConfigError(path, f"{what} {column!r} is not in schema {schema.name!r}")
    return schema.field(column)


def validate_against_schema(config, schema: Schema) -> None:
    """Raise ConfigError naming the first field of ``config`` that Pinot would refuse."""
    _validate_name(config)
    _validate_segments_config(config, schema)
    _validate_ingestion(config, schema)
    _validate_tiers(config.to_json().get("tierConfigs"))
    validate_indexing(config, schema)
    _validate_instance_partitions(config.to_json())
    validate_upsert_and_dedup(config, schema)


def _validate_name(config) -> None:
    # the name becomes folders and znodes on every process (engine.common.names)
    try:
        check_table_name(config.to_json()["tableName"])
    except InvalidNameError as exc:
        raise ConfigError("tableName", str(exc)) from None


def _validate_segments_config(config, schema: Schema) -> None:
    seg = config.segments_config
    time_col = seg.time_column_name
    if config.table_type == "REALTIME" and time_col is None:
        raise ConfigError(
            "segmentsConfig.timeColumnName", "'timeColumnName' cannot be null in a REALTIME table"
        )
    # An OFFLINE table may have no time column: no time retention, pruning or time boundary.
    if (
        time_col is not None
        and not _column(schema, time_col, "segmentsConfig.timeColumnName", "time column").is_time
    ):
        raise ConfigError(
            "segmentsConfig.timeColumnName",
            f"column {time_col!r} is not a dateTimeFieldSpec/timeFieldSpec in schema "
            f"{schema.name!r}",
        )
    raw = config.to_json()
    if raw.get("isDimTable"):
        if config.table_type != "OFFLINE":
            raise ConfigError("isDimTable", "a dimension table must be an OFFLINE table")
        if not schema.primary_key_columns:
            raise ConfigError("isDimTable", f"a dimension table needs primaryKeyColumns in "
                              f"schema {schema.name!r}")  # fmt: skip
    scheme = seg.peer_segment_download_scheme
    if scheme is not None:
        if str(scheme).lower() not in ("http", "https"):
            raise ConfigError("segmentsConfig.peerSegmentDownloadScheme",
                              f"{scheme!r} must be http or https")  # fmt: skip
        if seg.replication < 2:
            raise ConfigError("segmentsConfig.peerSegmentDownloadScheme",
                              "peerSegmentDownloadScheme needs replication of at least 2")  # fmt: skip
    push = config.push_type
    if config.table_type == "OFFLINE" and push and push not in ("APPEND", "REFRESH"):
        field = ("ingestionConfig.batchIngestionConfig.segmentIngestionType"
                 if config.ingestion_config.segment_ingestion_type else "segmentsConfig.segmentPushType")  # fmt: skip
        raise ConfigError(field, f"invalid push type {push!r}; expected APPEND or REFRESH")
    if seg.retention_time_unit and seg.retention_time_unit not in UNIT_MILLIS:
        raise ConfigError("segmentsConfig.retentionTimeUnit",
                          f"invalid time unit {seg.retention_time_unit!r}")  # fmt: skip


def _validate_ingestion(config, schema: Schema) -> None:
    raw = config.to_json()
    ingestion = raw.get("ingestionConfig") or {}
    index = raw.get("tableIndexConfig") or {}
    if ingestion.get("streamIngestionConfig") is not None and index.get("streamConfigs"):
        raise ConfigError("tableIndexConfig.streamConfigs", "should not be set when "
                          "ingestionConfig.streamIngestionConfig is provided")  # fmt: skip
    if raw.get("isDimTable") and raw.get("ingestionConfig") is not None:
        batch = ingestion.get("batchIngestionConfig")
        if batch is None:
            raise ConfigError("ingestionConfig.batchIngestionConfig",
                              "a dimension table needs a batch ingestion config")  # fmt: skip
        if str(batch.get("segmentIngestionType", "")).upper() != "REFRESH":
            raise ConfigError("ingestionConfig.batchIngestionConfig.segmentIngestionType",
                              "a dimension table's segment ingestion type must be REFRESH")  # fmt: skip
    aggregation_sources = _validate_aggregations(ingestion, index, schema)
    transforms = config.ingestion_config.transform_configs
    # A destination outside the schema is fine when another transform reads it (chaining).
    read = [set(re.findall(r"\w+", t.transform_function)) for t in transforms]
    seen: set[str] = set()
    for i, tc in enumerate(transforms):
        path = f"ingestionConfig.transformConfigs[{i}].columnName"
        if tc.column_name in seen:
            raise ConfigError(path, f"duplicate transform config for column {tc.column_name!r}")
        seen.add(tc.column_name)
        consumed = any(tc.column_name in names for j, names in enumerate(read) if j != i)
        if not (schema.has_column(tc.column_name) or tc.column_name in aggregation_sources
                or consumed):  # fmt: skip
            raise ConfigError(path, f"the destination column {tc.column_name!r} must be in "
                              f"schema {schema.name!r}, be read by another transform, or be an "
                              "aggregation source")  # fmt: skip
    prefixes = (ingestion.get("complexTypeConfig") or {}).get("prefixesToRename") or {}
    for prefix in prefixes:
        for column in schema.columns:
            if column.startswith(prefix):
                raise ConfigError("ingestionConfig.complexTypeConfig.prefixesToRename",
                                  f"schema column {column!r} begins with prefix {prefix!r}")  # fmt: skip


def _validate_aggregations(ingestion: dict, index: dict, schema: Schema) -> set[str]:
    configs = ingestion.get("aggregationConfigs") or []
    if not configs:
        return set()
    if str(index.get("aggregateMetrics", False)).lower() == "true":
        raise ConfigError("tableIndexConfig.aggregateMetrics",
                          "aggregateMetrics cannot be set with ingestionConfig.aggregationConfigs")  # fmt: skip
    sources, targets = set(), set()
    for i, agg in enumerate(configs):
        path = f"ingestionConfig.aggregationConfigs[{i}]"
        column, function = agg.get("columnName"), agg.get("aggregationFunction")
        if not column or not function:
            raise ConfigError(path, "columnName and aggregationFunction are required")
        spec = _column(schema, column, f"{path}.columnName", "aggregation destination")
        if spec.field_type.value != "METRIC":
            raise ConfigError(f"{path}.columnName", f"{column!r} must be a metric column")
        if column in targets:
            raise ConfigError(f"{path}.columnName", f"duplicate aggregation config for {column!r}")
        targets.add(column)
        match = re.fullmatch(r"\s*(\w+)\s*\(\s*([^(),]+?)\s*(?:,[^()]*)?\)\s*", str(function))
        if match is None:
            raise ConfigError(f"{path}.aggregationFunction",
                              f"{function!r} must be a function of one column")  # fmt: skip
        sources.add(match.group(2).strip('`"'))
    metrics = {f.name for f in schema.fields if f.field_type.value == "METRIC"}
    if metrics != targets:
        raise ConfigError("ingestionConfig.aggregationConfigs", "all metric columns must be "
                          f"aggregated; missing {sorted(metrics - targets)}")  # fmt: skip
    return sources


def _validate_tiers(tiers) -> None:
    names: set[str] = set()
    for i, tier in enumerate(tiers or []):
        path = f"tierConfigs[{i}]"
        name = str(tier.get("name") or "")
        if not name:
            raise ConfigError(f"{path}.name", "tier name cannot be blank")
        if name in names:
            raise ConfigError(f"{path}.name", f"tier name {name!r} already exists")
        names.add(name)
        selector = str(tier.get("segmentSelectorType") or "").lower()
        if selector == "time":
            age = tier.get("segmentAge")
            if not age or not _PERIOD.match(str(age)):
                raise ConfigError(f"{path}.segmentAge", f"{age!r} must be a period such as 30d")
        elif selector != "fixed":
            raise ConfigError(f"{path}.segmentSelectorType",
                              f"unsupported segmentSelectorType {tier.get('segmentSelectorType')!r}")  # fmt: skip
        if str(tier.get("storageType") or "").lower() != "pinot_server":
            raise ConfigError(f"{path}.storageType",
                              f"unsupported storageType {tier.get('storageType')!r}")  # fmt: skip
        tag = tier.get("serverTag")
        if not tag or not _SERVER_TAG.match(str(tag)):
            raise ConfigError(f"{path}.serverTag",
                              f"{tag!r} must be <tenant>_OFFLINE or <tenant>_REALTIME")  # fmt: skip


def _validate_instance_partitions(raw: dict) -> None:
    shared = raw.get("instancePartitionsMap") or {}
    assigned = raw.get("instanceAssignmentConfigMap") or {}
    for kind in shared:
        if kind in assigned:
            raise ConfigError(f"instancePartitionsMap.{kind}", "both instanceAssignmentConfigMap "
                              f"and instancePartitionsMap set for {kind}")  # fmt: skip


def verify_hybrid_table_configs(offline, realtime) -> None:
    """Pinot's checks across the two halves of a hybrid table: both have the same time column
    (the broker splits queries on it) and the same broker tenant."""
    off, rt = offline.time_column_name, realtime.time_column_name
    if off is None or rt is None:
        raise ConfigError(
            "segmentsConfig.timeColumnName",
            f"'timeColumnName' cannot be null in hybrid table {offline.table_name}: OFFLINE has "
            f"{off!r}, REALTIME has {rt!r}",
        )
    if off != rt:
        raise ConfigError(
            "segmentsConfig.timeColumnName",
            f"the time columns of hybrid table {offline.table_name} differ: OFFLINE {off!r}, "
            f"REALTIME {rt!r}",
        )
    if offline.tenants.broker != realtime.tenants.broker:
        raise ConfigError(
            "tenants.broker",
            f"the broker tenants of hybrid table {offline.table_name} differ: OFFLINE "
            f"{offline.tenants.broker!r}, REALTIME {realtime.tenants.broker!r}",
        )
