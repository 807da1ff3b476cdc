"""Schemas and table configs, read from Pinot's JSON unchanged.

Public API::

    from engine.spi import Schema, TableConfig, FieldSpec, DateTimeFormat

    schema = Schema.from_json(dict_or_json_text)        # ConfigError(.field) when invalid
    schema.columns                  # ["col", ...] in JSON order
    schema.field("col")             # FieldSpec(name, data_type: DataType, field_type: FieldType,
                                    #   single_value, default_null_value (stored form), format,
                                    #   granularity, max_length, transform_function)
    schema.time_column_name         # legacy TIME column, else first DATE_TIME column, else None
    schema.to_json()                # the original document
    schema.ignored_keys             # kept but not acted on, e.g. ["complexFieldSpecs"]

    config = TableConfig.from_json(dict_or_json_text, schema=None)  # validates vs schema if given
    config.table_name / .table_type ("OFFLINE"|"REALTIME") / .table_name_with_type
    config.to_json()                # the original document, unknown keys included
    config.unrecognized_properties  # keys Pinot does not know: {"/json/pointer": value}
    config.warnings                 # [{"field", "message"}]: known to Pinot, not implemented
    config.segments_config          # SegmentsConfig(time_column_name, replication,
                                    #   retention_time_unit, retention_time_value,
                                    #   segment_push_type, segment_push_frequency, ...)
    config.index_config             # IndexingConfig(inverted_index_columns, range_index_columns,
                                    #   bloom_filter_columns, sorted_column (list),
                                    #   no_dictionary_columns, star_tree_configs
                                    #   [StarTreeIndexConfig], enable_default_star_tree,
                                    #   segment_partition_config {col: ColumnPartitionConfig})
    config.inverted_index_columns / .range_index_columns / .bloom_filter_columns /
    config.no_dictionary_columns / .sorted_column   # fieldConfigList indexes map and the
                                    #   older lists resolved as Pinot does (column_indexes)
    config.field_config_list        # [FieldConfig(name, encoding_type, index_types, ...)]
    config.ingestion_config         # IngestionConfig(transform_configs [TransformConfig],
                                    #   filter_function, continue_on_error,
                                    #   stream_config_maps, batch_config_maps)
    config.tenants                  # TenantConfig(broker, server, tag_override_config)
    config.task_configs             # task.taskTypeConfigsMap as {type: {key: value}}
    config.stream_configs           # first stream config map (or legacy streamConfigs)
    config.push_frequency / .push_type   # batchIngestionConfig, else legacy segmentsConfig
    config.ingestion_config.filter_config  # {"filterFunction": ...} or None

    DateTimeFormat.parse("1:DAYS:EPOCH").to_millis(arrow_array)   # int64 epoch ms

    from engine.spi.partition import partition_function   # Pinot's partition functions, the
    f = partition_function("Murmur3", 4, {"seed": "9001"})  # only copy (writer and pruners)
    f.partitions_of_values(values, DataType.INT)          # sorted partition ids
    f.partition_of_literal(literal, DataType.INT)         # a filter value's id, None if unknown

Errors are ``engine.common.errors.ConfigError`` with ``.field`` = JSON path of the bad key.
"""

from engine.spi.datetime_format import DateTimeFormat
from engine.spi.schema import FieldSpec, Schema
from engine.spi.table_config import (
    ColumnPartitionConfig,
    FieldConfig,
    IndexingConfig,
    IngestionConfig,
    SegmentsConfig,
    StarTreeIndexConfig,
    TableConfig,
    TenantConfig,
    TransformConfig,
)

__all__ = [
    "ColumnPartitionConfig",
    "DateTimeFormat",
    "FieldConfig",
    "FieldSpec",
    "IndexingConfig",
    "IngestionConfig",
    "Schema",
    "SegmentsConfig",
    "StarTreeIndexConfig",
    "TableConfig",
    "TenantConfig",
    "TransformConfig",
]
