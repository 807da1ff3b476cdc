"""Pinot's rules for a table's indexes and field configs, against the schema.

The index rules follow Pinot's ``validateIndexingConfigAndFieldConfigList``: every column named
exists, dictionary-based indexes have a dictionary (after resolving the ``indexes`` map against
the older lists, see ``column_indexes``), sorted and partition columns are single-value, and a
star-tree's dimensions are dictionary-encoded single-value columns.
"""

from __future__ import annotations

from engine.common.errors import ConfigError
from engine.common.types import DataType
from engine.spi.compression import validate_codecs
from engine.spi.schema import Schema


def _column(schema: Schema, column: str, path: str, what: str = "column"):
    if not schema.has_column(column):
        raise ConfigError(path, f"{what} {column!r} is not in schema {schema.name!r}")
    return schema.field(column)


def validate_indexing(config, schema: Schema) -> None:
    """Raise ConfigError at the first index setting Pinot would refuse."""
    index = config.index_config
    raw_index = config.to_json().get("tableIndexConfig") or {}
    seen: set[str] = set()
    for i, fc in enumerate(config.field_config_list):
        if fc.name in seen:
            raise ConfigError(
                f"fieldConfigList[{i}].name", f"duplicate FieldConfig for {fc.name!r}"
            )
        seen.add(fc.name)
        _column(schema, fc.name, f"fieldConfigList[{i}].name")
    for key, cols in (
        ("invertedIndexColumns", index.inverted_index_columns),
        ("rangeIndexColumns", index.range_index_columns),
        ("bloomFilterColumns", index.bloom_filter_columns),
        ("noDictionaryColumns", index.no_dictionary_columns),
        ("sortedColumn", index.sorted_column),
        ("jsonIndexColumns", raw_index.get("jsonIndexColumns") or []),
        ("onHeapDictionaryColumns", raw_index.get("onHeapDictionaryColumns") or []),
        ("varLengthDictionaryColumns", raw_index.get("varLengthDictionaryColumns") or []),
    ):
        for i, col in enumerate(cols):
            if col:  # Pinot drops empty names from these lists before validating
                _column(schema, col, f"tableIndexConfig.{key}[{i}]")
    for key, cols in (
        ("bloomFilterConfigs", index.bloom_filter_configs),
        ("noDictionaryConfig", index.no_dictionary_config),
        ("segmentPartitionConfig.columnPartitionMap", index.segment_partition_config),
        ("jsonIndexConfigs", raw_index.get("jsonIndexConfigs") or {}),
    ):
        for col in cols:
            _column(schema, col, f"tableIndexConfig.{key}.{col}")

    resolved = config.resolved_indexes
    no_dict = set(resolved.no_dictionary)
    for col in resolved.inverted:
        path = resolved.origin[("inverted", col)]
        _column(schema, col, path)
        if col in no_dict:
            raise ConfigError(path, f"cannot create an inverted index on column {col!r} without "
                              f"a dictionary (no dictionary from {resolved.origin[('dictionary', col)]})")  # fmt: skip
    for col in resolved.range:
        path = resolved.origin[("range", col)]
        spec = _column(schema, col, path)
        if col in no_dict and not spec.data_type.is_numeric:
            raise ConfigError(path, f"cannot create a range index on non-numeric column {col!r} "
                              "without a dictionary")  # fmt: skip
    for col in resolved.bloom:
        _column(schema, col, resolved.origin[("bloom", col)])
    for col in no_dict:
        _column(schema, col, resolved.origin[("dictionary", col)])
    for i, col in enumerate(index.sorted_column):
        if col and not schema.field(col).single_value:
            raise ConfigError(f"tableIndexConfig.sortedColumn[{i}]", f"cannot sort on multi-value column {col!r}")  # fmt: skip
    for col in index.segment_partition_config:
        if not schema.field(col).single_value:
            raise ConfigError(f"tableIndexConfig.segmentPartitionConfig.columnPartitionMap.{col}",
                              f"cannot partition on multi-value column {col!r}")  # fmt: skip
    json_cols = raw_index.get("jsonIndexConfigs") or raw_index.get("jsonIndexColumns") or []
    for col in json_cols:
        spec = schema.field(col)
        if not spec.single_value or spec.data_type not in (DataType.STRING, DataType.JSON):
            raise ConfigError("tableIndexConfig.jsonIndexColumns",
                              f"a JSON index needs a single-value string column, {col!r} is not")  # fmt: skip
    _validate_field_index_types(config, schema, no_dict)
    validate_codecs(config, schema, no_dict)
    _validate_star_trees(config, schema, no_dict)


def _validate_field_index_types(config, schema: Schema, no_dict: set[str]) -> None:
    for i, fc in enumerate(config.field_config_list):
        spec = schema.field(fc.name)
        path = f"fieldConfigList[{i}]"
        stored_string = spec.data_type in (DataType.STRING, DataType.JSON)
        if "TEXT" in fc.index_types and not stored_string:
            raise ConfigError(path, f"a TEXT index needs a string column, {fc.name!r} is {spec.data_type}")  # fmt: skip
        if "FST" in fc.index_types:
            if fc.name in no_dict:
                raise ConfigError(path, f"an FST index needs a dictionary on {fc.name!r}")
            if not (spec.single_value and stored_string):
                raise ConfigError(path, f"an FST index needs a single-value string column, {fc.name!r} is not")  # fmt: skip
        timestamp = (config.to_json()["fieldConfigList"][i] or {}).get("timestampConfig")
        if "TIMESTAMP" in fc.index_types or timestamp:
            if spec.data_type is not DataType.TIMESTAMP and spec.data_type is not DataType.LONG:
                raise ConfigError(path, f"a TIMESTAMP index needs a TIMESTAMP column, {fc.name!r} is {spec.data_type}")  # fmt: skip
            if not spec.single_value:
                raise ConfigError(path, f"cannot create a TIMESTAMP index on multi-value column {fc.name!r}")  # fmt: skip


def _validate_star_trees(config, schema: Schema, no_dict: set[str]) -> None:
    for t, tree in enumerate(config.index_config.star_tree_configs):
        path = f"tableIndexConfig.starTreeIndexConfigs[{t}]"
        for i, dim in enumerate(tree.dimensions_split_order):
            spec = _column(schema, dim, f"{path}.dimensionsSplitOrder[{i}]", "star-tree dimension")
            if dim in no_dict:
                raise ConfigError(f"{path}.dimensionsSplitOrder[{i}]",
                                  f"cannot create a star-tree on dimension {dim!r} without a dictionary")  # fmt: skip
            if not spec.single_value:
                raise ConfigError(f"{path}.dimensionsSplitOrder[{i}]",
                                  f"star-tree dimensions must be single-value, {dim!r} is multi-value")  # fmt: skip
        for i, dim in enumerate(tree.skip_star_node_creation_for_dimensions):
            if dim not in tree.dimensions_split_order:
                raise ConfigError(f"{path}.skipStarNodeCreationForDimensions[{i}]",
                                  f"{dim!r} is not in dimensionsSplitOrder")  # fmt: skip
        pairs = tree.function_column_pairs + tree.unbuilt_function_column_pairs
        for i, pair in enumerate(pairs):
            function, _, col = pair.partition("__")
            if col == "*":
                continue
            spec = _column(schema, col, f"{path}.functionColumnPairs[{i}]")
            if pair not in tree.function_column_pairs:
                continue
            # Sprig's pre-aggregations read numbers; Pinot fails such a segment build too.
            if function != "COUNT" and not spec.data_type.is_numeric:
                raise ConfigError(f"{path}.functionColumnPairs[{i}]",
                                  f"{function} needs a numeric column, {col!r} is {spec.data_type}")  # fmt: skip
            if function.endswith("MV") != (not spec.single_value):
                kind = "multi" if not spec.single_value else "single"
                raise ConfigError(f"{path}.functionColumnPairs[{i}]",
                                  f"{function} does not match {kind}-value column {col!r}")  # fmt: skip
