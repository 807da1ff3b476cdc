"""Segment and column metadata, stored as ``metadata.json`` with Pinot-like field names."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.common.types import DataType, FieldType


@dataclasses.dataclass
class ColumnMetadata:
    """Per-column facts. ``min_value``/``max_value`` are JSON-friendly stored values (BYTES as
    hex, BIG_DECIMAL as string); ``partitions`` are the partition ids the column's values hash
    to. ``indexes`` lists the index kinds built for the column. ``forward_format`` is how the
    forward index is stored: "npy" (memory-mapped dict ids), "zstd" (chunk-compressed dict
    ids), "sorted" (doc ranges per dict id), "raw-zstd" / "raw-arrow" (no dictionary)."""

    name: str
    data_type: DataType
    field_type: FieldType
    single_value: bool
    cardinality: int
    min_value: Any
    max_value: Any
    is_sorted: bool
    has_dictionary: bool
    total_number_of_entries: int
    max_num_multi_values: int = 0
    partition_function: str | None = None
    num_partitions: int | None = None
    partitions: list[int] | None = None
    # None only in metadata written before the function config was recorded (see
    # engine.spi.partition.recorded_function); {} when the function has none
    partition_function_config: dict[str, str] | None = None
    default_null_value: Any = None
    file_prefix: str = ""
    forward_dtype: str | None = None
    forward_format: str = "npy"
    indexes: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "dataType": self.data_type.value,
            "fieldType": self.field_type.value,
            "singleValue": self.single_value,
            "cardinality": self.cardinality,
            "minValue": self.min_value,
            "maxValue": self.max_value,
            "isSorted": self.is_sorted,
            "hasDictionary": self.has_dictionary,
            "totalNumberOfEntries": self.total_number_of_entries,
            "maxNumberOfMultiValues": self.max_num_multi_values,
            "partitionFunction": self.partition_function,
            "numPartitions": self.num_partitions,
            "partitions": self.partitions,
            "partitionFunctionConfig": self.partition_function_config,
            "defaultNullValue": self.default_null_value,
            "filePrefix": self.file_prefix,
            "forwardIndexDataType": self.forward_dtype,
            "forwardIndexFormat": self.forward_format,
            "indexes": list(self.indexes),
        }

    @classmethod
    def from_json(cls, name: str, raw: dict) -> ColumnMetadata:
        return cls(
            name=name,
            data_type=DataType(raw["dataType"]),
            field_type=FieldType(raw["fieldType"]),
            single_value=raw["singleValue"],
            cardinality=raw["cardinality"],
            min_value=raw["minValue"],
            max_value=raw["maxValue"],
            is_sorted=raw["isSorted"],
            has_dictionary=raw["hasDictionary"],
            total_number_of_entries=raw["totalNumberOfEntries"],
            max_num_multi_values=raw.get("maxNumberOfMultiValues", 0),
            partition_function=raw.get("partitionFunction"),
            num_partitions=raw.get("numPartitions"),
            partitions=raw.get("partitions"),
            partition_function_config=raw.get("partitionFunctionConfig"),
            default_null_value=raw.get("defaultNullValue"),
            file_prefix=raw["filePrefix"],
            forward_dtype=raw.get("forwardIndexDataType"),
            forward_format=raw.get("forwardIndexFormat", "npy"),
            indexes=list(raw.get("indexes", [])),
        )


@dataclasses.dataclass
class SegmentMetadata:
    """Segment-level facts. ``start_time``/``end_time`` are the min/max of the time column in
    ``time_unit`` (inclusive), None without a time column; ``start_time_ms``/``end_time_ms`` are
    the same bounds in epoch milliseconds (for time pruning and the hybrid time boundary). ``creation_time`` is epoch ms;
    ``crc`` is a CRC32 over the segment's data files."""

    segment_name: str
    table_name: str
    total_docs: int
    crc: int
    creation_time: int
    columns: dict[str, ColumnMetadata]
    time_column: str | None = None
    time_unit: str | None = None
    start_time: Any = None
    end_time: Any = None
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    star_trees: list[dict] = dataclasses.field(default_factory=list)
    custom: dict = dataclasses.field(default_factory=dict)
    version: int = 1

    def to_json(self) -> dict:
        return {
            "segmentName": self.segment_name,
            "tableName": self.table_name,
            "totalDocs": self.total_docs,
            "crc": self.crc,
            "creationTime": self.creation_time,
            "timeColumn": self.time_column,
            "timeUnit": self.time_unit,
            "startTime": self.start_time,
            "endTime": self.end_time,
            "startTimeMs": self.start_time_ms,
            "endTimeMs": self.end_time_ms,
            "segmentVersion": self.version,
            "columns": {name: col.to_json() for name, col in self.columns.items()},
            "starTrees": list(self.star_trees),
            "custom": dict(self.custom),
        }

    @classmethod
    def from_json(cls, raw: dict) -> SegmentMetadata:
        return cls(
            segment_name=raw["segmentName"],
            table_name=raw["tableName"],
            total_docs=raw["totalDocs"],
            crc=raw["crc"],
            creation_time=raw["creationTime"],
            columns={n: ColumnMetadata.from_json(n, c) for n, c in raw["columns"].items()},
            time_column=raw.get("timeColumn"),
            time_unit=raw.get("timeUnit"),
            start_time=raw.get("startTime"),
            end_time=raw.get("endTime"),
            start_time_ms=raw.get("startTimeMs"),
            end_time_ms=raw.get("endTimeMs"),
            star_trees=list(raw.get("starTrees", [])),
            custom=dict(raw.get("custom", {})),
            version=raw.get("segmentVersion", 1),
        )

    def to_pinot_properties(self) -> dict[str, str]:
        """The metadata as Pinot's ``metadata.properties`` keys (``segment.name``,
        ``segment.total.docs``, ``column.<c>.cardinality``, ...), values as strings."""
        props = {
            "segment.name": self.segment_name,
            "segment.table.name": self.table_name,
            "segment.total.docs": self.total_docs,
            "segment.creation.time": self.creation_time,
            "segment.crc": self.crc,
            "segment.index.version": "v3",
        }
        if self.time_column:
            props |= {
                "segment.time.column.name": self.time_column,
                "segment.start.time": self.start_time,
                "segment.end.time": self.end_time,
                "segment.time.unit": self.time_unit,
            }
        for name, col in self.columns.items():
            key = f"column.{name}."
            props |= {
                key + "cardinality": col.cardinality,
                key + "totalDocs": self.total_docs,
                key + "dataType": col.data_type.value,
                key + "columnType": col.field_type.value,
                key + "isSorted": col.is_sorted,
                key + "hasDictionary": col.has_dictionary,
                key + "isSingleValues": col.single_value,
                key + "maxNumberOfMultiValues": col.max_num_multi_values,
                key + "totalNumberOfEntries": col.total_number_of_entries,
                key + "minValue": col.min_value,
                key + "maxValue": col.max_value,
                key + "defaultNullValue": col.default_null_value,
            }
            if col.partition_function:
                props |= {
                    key + "partitionFunction": col.partition_function,
                    key + "numPartitions": col.num_partitions,
                    key + "partitionValues": ",".join(str(p) for p in col.partitions or []),
                }
                for config_key, value in (col.partition_function_config or {}).items():
                    props[key + "partitionFunctionConfig." + config_key] = value
        return {k: _property_text(v) for k, v in props.items() if v is not None}


def _property_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
