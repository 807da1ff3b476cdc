"""Checks that a table config only names columns the schema has, with usable types."""

from __future__ import annotations

from engine.common.errors import ConfigError
from engine.common.types import DataType, FieldType
from engine.spi.schema import Schema


def _require_column(schema: Schema, column: str, path: str) -> None:
    if not schema.has_column(column):
        raise ConfigError(path, f"column {column!r} is not in schema {schema.name!r}")


def validate_against_schema(config, schema: Schema) -> None:
    """Raise ConfigError naming the first field of ``config`` that ``schema`` cannot satisfy."""
    time_col = config.segments_config.time_column_name
    if time_col is not None:
        _require_column(schema, time_col, "segmentsConfig.timeColumnName")
        if not schema.field(time_col).is_time:
            raise ConfigError(
                "segmentsConfig.timeColumnName",
                f"column {time_col!r} is not a dateTimeFieldSpec/timeFieldSpec",
            )
    elif config.table_type == "REALTIME" or config.push_type == "APPEND":
        kind = "REALTIME" if config.table_type == "REALTIME" else "APPEND"
        raise ConfigError(
            "segmentsConfig.timeColumnName",
            f"a {kind} table needs a time column (segmentsConfig.timeColumnName)",
        )

    index = config.index_config
    for key, cols in (
        ("invertedIndexColumns", index.inverted_index_columns),
        ("rangeIndexColumns", index.range_index_columns),
        ("bloomFilterColumns", index.bloom_filter_columns),
        ("sortedColumn", index.sorted_column),
        ("noDictionaryColumns", index.no_dictionary_columns),
    ):
        for i, col in enumerate(cols):
            _require_column(schema, col, f"tableIndexConfig.{key}[{i}]")
    for col in index.bloom_filter_configs:
        _require_column(schema, col, f"tableIndexConfig.bloomFilterConfigs.{col}")
    for col in index.no_dictionary_config:
        _require_column(schema, col, f"tableIndexConfig.noDictionaryConfig.{col}")
    for i, col in enumerate(index.sorted_column):
        if not schema.field(col).single_value:
            raise ConfigError(f"tableIndexConfig.sortedColumn[{i}]", f"{col!r} is multi-value")
    for i, col in enumerate(index.range_index_columns):
        if (
            not schema.field(col).data_type.is_numeric
            and schema.field(col).data_type is not DataType.STRING
        ):
            raise ConfigError(
                f"tableIndexConfig.rangeIndexColumns[{i}]",
                f"range index needs a numeric or STRING column, {col!r} is {schema.field(col).data_type}",
            )
    no_dict = set(config.no_dictionary_columns)
    for col in config.inverted_index_columns:
        if col in no_dict:
            path = (
                f"tableIndexConfig.invertedIndexColumns[{index.inverted_index_columns.index(col)}]"
                if col in index.inverted_index_columns
                else "fieldConfigList"
            )
            raise ConfigError(path, f"inverted index on {col!r} needs a dictionary, but it is raw")
    for col in index.segment_partition_config:
        _require_column(
            schema, col, f"tableIndexConfig.segmentPartitionConfig.columnPartitionMap.{col}"
        )

    for t, tree in enumerate(index.star_tree_configs):
        path = f"tableIndexConfig.starTreeIndexConfigs[{t}]"
        for i, dim in enumerate(tree.dimensions_split_order):
            _require_column(schema, dim, f"{path}.dimensionsSplitOrder[{i}]")
            if not schema.field(dim).single_value:
                raise ConfigError(f"{path}.dimensionsSplitOrder[{i}]", f"{dim!r} is multi-value")
            if dim in no_dict:
                raise ConfigError(f"{path}.dimensionsSplitOrder[{i}]", f"{dim!r} has no dictionary")
        for i, dim in enumerate(tree.skip_star_node_creation_for_dimensions):
            if dim not in tree.dimensions_split_order:
                raise ConfigError(
                    f"{path}.skipStarNodeCreationForDimensions[{i}]",
                    f"{dim!r} is not in dimensionsSplitOrder",
                )
        for i, pair in enumerate(tree.function_column_pairs):
            function, _, col = pair.partition("__")
            if col == "*":
                if function != "COUNT":
                    raise ConfigError(
                        f"{path}.functionColumnPairs[{i}]", f"{function} needs a column"
                    )
                continue
            _require_column(schema, col, f"{path}.functionColumnPairs[{i}]")
            spec = schema.field(col)
            if function != "COUNT" and not spec.data_type.is_numeric:
                raise ConfigError(
                    f"{path}.functionColumnPairs[{i}]",
                    f"{function} needs a numeric column, {col!r} is {spec.data_type}",
                )
            if function.endswith("MV") != (not spec.single_value):
                raise ConfigError(
                    f"{path}.functionColumnPairs[{i}]",
                    f"{function} does not match {'multi' if not spec.single_value else 'single'}-value column {col!r}",
                )

    for i, fc in enumerate(config.field_config_list):
        _require_column(schema, fc.name, f"fieldConfigList[{i}].name")
    for i, tc in enumerate(config.ingestion_config.transform_configs):
        _require_column(schema, tc.column_name, f"ingestionConfig.transformConfigs[{i}].columnName")
    for i, pk in enumerate(schema.primary_key_columns):
        if schema.field(pk).field_type is FieldType.METRIC:
            raise ConfigError(f"primaryKeyColumns[{i}]", f"{pk!r} is a metric")
