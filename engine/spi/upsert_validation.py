"""Pinot's upsert and dedup rules (``TableConfigUtils#validateUpsertAndDedupConfig``,
``#validateTTLForUpsertConfig``, ``#validatePartialUpsertStrategies`` and
``#validateBackwardCompatibility``), with Pinot's messages, so a user who searches one finds
Pinot's documentation. Each raises ConfigError naming the JSON field at fault."""

from __future__ import annotations

from engine.common.errors import ConfigError
from engine.common.types import DataType, FieldType
from engine.spi.schema import Schema
from engine.spi.upsert_config import DedupConfig, Strategy, Toggle, UpsertConfig, UpsertMode

UPSERT_ROUTING = frozenset({"strictreplicagroup", "multistagereplicagroup"})
UPSERT_COMPACTION_TASKS = ("UpsertCompactionTask", "UpsertCompactMergeTask")
_NUMERIC = {DataType.INT, DataType.LONG, DataType.FLOAT, DataType.DOUBLE, DataType.BIG_DECIMAL,
            DataType.TIMESTAMP}  # fmt: skip


def _check(condition: bool, field: str, message: str) -> None:
    if not condition:
        raise ConfigError(field, message)


def validate_upsert_and_dedup(config, schema: Schema) -> None:
    """Raise ConfigError at the first upsert/dedup setting Pinot would refuse."""
    raw = config.to_json()
    upsert = UpsertConfig.of(config)
    dedup = DedupConfig.of(config)
    if upsert is None and dedup is None:
        return
    key = "upsertConfig" if upsert is not None else "dedupConfig"
    _check(upsert is None or dedup is None, "dedupConfig",
           "A table can have either Upsert or Dedup enabled, but not both")  # fmt: skip
    _check(bool(schema.primary_key_columns), key,
           "Upsert/Dedup table must have primary key columns in the schema")  # fmt: skip
    for pk in schema.primary_key_columns:
        _check(schema.field(pk).single_value, "primaryKeyColumns",
               f"Upsert/Dedup primary key column: {pk} cannot be of multi-value type")  # fmt: skip
    selector = str((raw.get("routing") or {}).get("instanceSelectorType") or "")
    _check(selector.lower() in UPSERT_ROUTING, "routing.instanceSelectorType",
           "Upsert/Dedup table must use strict replica-group (i.e. strictReplicaGroup) based "
           "routing")  # fmt: skip
    _check(len(config.ingestion_config.stream_config_maps) <= 1,
           "ingestionConfig.streamIngestionConfig.streamConfigMaps",
           "Multiple stream configs are not supported for upsert table")  # fmt: skip
    if config.table_type == "REALTIME":
        override = config.tenants.tag_override_config
        _check(not override.get("realtimeConsuming") and not override.get("realtimeCompleted"),
               "tenants.tagOverrideConfig",
               "Invalid tenant tag override used for Upsert/Dedup table")  # fmt: skip
        _check("COMPLETED" not in (raw.get("instanceAssignmentConfigMap") or {}),
               "instanceAssignmentConfigMap.COMPLETED",
               "COMPLETED instance partitions can't be configured for Upsert/Dedup table")  # fmt: skip
    else:
        _check(dedup is None, "dedupConfig", "Dedup is not supported for OFFLINE table")
        _check(upsert is None or upsert.mode is UpsertMode.FULL, "upsertConfig.mode",
               "Partial upsert is not supported for OFFLINE table")  # fmt: skip
        _check(bool(config.index_config.segment_partition_config),
               "tableIndexConfig.segmentPartitionConfig",
               "Upsert table must have a segment partition config for OFFLINE table")  # fmt: skip
    if dedup is not None:
        _validate_dedup(config, schema, dedup)
    if upsert is not None:
        _validate_upsert(config, schema, upsert)
        _validate_ttl(config, schema, upsert)
        _validate_partial(config, schema, upsert)


def _validate_dedup(config, schema: Schema, dedup: DedupConfig) -> None:
    if dedup.metadata_ttl > 0:
        column = dedup.time_column_of(config)
        _check(column is not None and schema.has_column(column), "dedupConfig.dedupTimeColumn",
               "When metadataTTL is configured, metadata time column or time column must be "
               "configured for dedup enabled table")  # fmt: skip
        _check(schema.field(column).data_type in _NUMERIC, "dedupConfig.dedupTimeColumn",
               f"MetadataTTL must have time column: {column} in numeric type, found: "
               f"{schema.field(column).data_type}")  # fmt: skip
    elif dedup.dedup_time_column:
        _check(schema.has_column(dedup.dedup_time_column), "dedupConfig.dedupTimeColumn",
               f"The dedup time column: {dedup.dedup_time_column} does not exist on schema")  # fmt: skip


def _validate_upsert(config, schema: Schema, upsert: UpsertConfig) -> None:
    raw = config.to_json()
    _check(
        raw.get("tierConfigs") is None, "tierConfigs", "The upsert table cannot have multi-tiers"
    )
    index = config.index_config
    _check(not index.star_tree_configs and not index.enable_default_star_tree,
           "tableIndexConfig.starTreeIndexConfigs",
           "The upsert table cannot have star-tree index.")  # fmt: skip
    _check(not (raw.get("tableIndexConfig") or {}).get("aggregateMetrics")
           and not (raw.get("ingestionConfig") or {}).get("aggregationConfigs"),
           "tableIndexConfig.aggregateMetrics",
           "Metrics aggregation and upsert cannot be enabled together")  # fmt: skip
    for i, column in enumerate(upsert.comparison_columns):
        _check(schema.has_column(column), f"upsertConfig.comparisonColumns[{i}]",
               "The comparison column does not exist on schema")  # fmt: skip
    delete = upsert.delete_record_column
    if delete:
        _check(schema.has_column(delete), "upsertConfig.deleteRecordColumn",
               f"Delete record column: {delete} does not exist")  # fmt: skip
        spec = schema.field(delete)
        _check(spec.single_value, "upsertConfig.deleteRecordColumn",
               f"The delete record column: {delete} must be a single-valued column")  # fmt: skip
        _check(spec.data_type in _NUMERIC | {DataType.BOOLEAN, DataType.STRING},
               "upsertConfig.deleteRecordColumn",
               f"The delete record column: {delete} must be of type: String / Boolean / Numeric")  # fmt: skip
    ooo = upsert.out_of_order_record_column
    _check(not (ooo and upsert.drop_out_of_order_record), "upsertConfig.outOfOrderRecordColumn",
           "outOfOrderRecordColumn and dropOutOfOrderRecord shouldn't exist together for upsert "
           "table")  # fmt: skip
    if ooo:
        _check(schema.has_column(ooo) and schema.field(ooo).single_value
               and schema.field(ooo).data_type is DataType.BOOLEAN,
               "upsertConfig.outOfOrderRecordColumn",
               f"The outOfOrderRecordColumn: {ooo} must be a single-valued BOOLEAN column")  # fmt: skip
    if upsert.enable_deleted_keys_compaction_consistency:
        path = "upsertConfig.enableDeletedKeysCompactionConsistency"
        _check(upsert.metadata_ttl == 0, path,
               "enableDeletedKeysCompactionConsistency and metadataTTL shouldn't exist together "
               "for upsert table")  # fmt: skip
        _check(upsert.preload is not Toggle.ENABLE, path,
               "enableDeletedKeysCompactionConsistency and enablePreload shouldn't exist together "
               "for upsert table")  # fmt: skip
        _check(upsert.deleted_keys_ttl > 0, path,
               "enableDeletedKeysCompactionConsistency should exist with deletedKeysTTL for upsert "
               "table")  # fmt: skip
        _check(upsert.snapshot is not Toggle.DISABLE, path,
               "enableDeletedKeysCompactionConsistency should exist with enableSnapshot for upsert "
               "table")  # fmt: skip
        _check(any(t in config.task_configs for t in UPSERT_COMPACTION_TASKS), path,
               "enableDeletedKeysCompactionConsistency should exist with UpsertCompactionTask / "
               "UpsertCompactMergeTask for upsert table")  # fmt: skip
    if upsert.consistency_mode.value != "NONE":
        path = "upsertConfig.consistencyMode"
        _check(upsert.new_segment_tracking_time_ms > 0, path,
               "Positive newSegmentTrackingTimeMs is required to enable consistency mode: "
               f"{upsert.consistency_mode}")  # fmt: skip
        _check(not upsert.drop_out_of_order_record and not ooo, path,
               "dropOutOfOrderRecord and outOfOrderRecordColumn can't be used with consistency "
               f"mode: {upsert.consistency_mode}")  # fmt: skip


def _validate_ttl(config, schema: Schema, upsert: UpsertConfig) -> None:
    if upsert.metadata_ttl <= 0 and upsert.deleted_keys_ttl <= 0:
        return
    columns = upsert.comparison_columns_of(config)
    _check(len(columns) == 1, "upsertConfig.comparisonColumns",
           "MetadataTTL / DeletedKeysTTL does not work with multiple comparison columns")  # fmt: skip
    data_type = schema.field(columns[0]).data_type if schema.has_column(columns[0]) else None
    _check(data_type in _NUMERIC, "upsertConfig.comparisonColumns",
           f"MetadataTTL / DeletedKeysTTL must have comparison column: {columns[0]} in numeric "
           f"type, found: {data_type}")  # fmt: skip
    if upsert.metadata_ttl > 0:
        _check(upsert.snapshot is not Toggle.DISABLE, "upsertConfig.snapshot",
               "Upsert TTL must have snapshot enabled")  # fmt: skip
    if upsert.deleted_keys_ttl > 0:
        _check(bool(upsert.delete_record_column), "upsertConfig.deletedKeysTTL",
               "Deleted Keys TTL can only be enabled with deleteRecordColumn set.")  # fmt: skip


def _validate_partial(config, schema: Schema, upsert: UpsertConfig) -> None:
    if upsert.mode is not UpsertMode.PARTIAL:
        return
    nullable = schema.nullable_columns(config.index_config.null_handling_enabled)
    _check(bool(nullable), "tableIndexConfig.nullHandlingEnabled",
           "Null handling must be enabled for partial upsert tables")  # fmt: skip
    pks = set(schema.primary_key_columns)
    for column, strategy in upsert.partial_upsert_strategies.items():
        path = f"upsertConfig.partialUpsertStrategies.{column}"
        _check(column not in pks, path, "Merger cannot be applied to primary key columns")
        if upsert.comparison_columns:
            _check(column not in upsert.comparison_columns, path,
                   "Merger cannot be applied to comparison column")  # fmt: skip
        else:
            _check(
                column != config.time_column_name, path, "Merger cannot be applied to time column"
            )
        _check(schema.has_column(column), path,
               f"Merger cannot be applied to non-existing column: {column}")  # fmt: skip
        spec = schema.field(column)
        if strategy is Strategy.INCREMENT:
            _check(spec.data_type in _NUMERIC - {DataType.TIMESTAMP}, path,
                   f"INCREMENT merger cannot be applied to non-numeric column: {column}")  # fmt: skip
            _check(spec.field_type is not FieldType.DATE_TIME, path,
                   f"INCREMENT merger cannot be applied to date time column: {column}")  # fmt: skip
        elif strategy in (Strategy.APPEND, Strategy.UNION):
            _check(not spec.single_value, path,
                   f"{strategy} merger cannot be applied to single-value column: {column}")  # fmt: skip


# Keys the servers read when a table starts: changing them under a running table would mix
# two rules in one table's metadata (TableConfigUtils#validateBackwardCompatibility).
_UPSERT_FIXED = ("mode", "hashFunction", "comparisonColumns", "dropOutOfOrderRecord",
                 "outOfOrderRecordColumn", "deleteRecordColumn")  # fmt: skip
_DEDUP_FIXED = ("hashFunction", "dedupTimeColumn")


def incompatible_changes(old, new) -> list[str]:
    """The upsert/dedup settings an update of table config ``old`` to ``new`` changes that
    Pinot refuses to change without ``force=true`` (empty: none)."""
    changed = []
    old_up, new_up = UpsertConfig.of(old), UpsertConfig.of(new)
    if (old_up is None) != (new_up is None):
        changed.append("upsertConfig")
    elif old_up is not None:
        for key in _UPSERT_FIXED:
            if _upsert_value(old, old_up, key) != _upsert_value(new, new_up, key):
                changed.append(f"upsertConfig.{key}")
    old_dd, new_dd = DedupConfig.of(old), DedupConfig.of(new)
    if (old_dd is None) != (new_dd is None):
        changed.append("dedupConfig")
    elif old_dd is not None:
        if old_dd.hash_function != new_dd.hash_function:
            changed.append("dedupConfig.hashFunction")
        if old_dd.time_column_of(old) != new_dd.time_column_of(new):
            changed.append("dedupConfig.dedupTimeColumn")
    return changed


def _upsert_value(config, upsert: UpsertConfig, key: str):
    return {
        "mode": upsert.mode,
        "hashFunction": upsert.hash_function,
        "comparisonColumns": upsert.comparison_columns_of(config),
        "dropOutOfOrderRecord": upsert.drop_out_of_order_record,
        "outOfOrderRecordColumn": upsert.out_of_order_record_column,
        "deleteRecordColumn": upsert.delete_record_column,
    }[key]


def incompatible_message(table: str, changed: list[str]) -> str:
    return (f"Invalid table config: {table} with error: Cannot modify {changed} as it may lead to "
            "data inconsistencies. Please create a new table instead.")  # fmt: skip
