"""Pinot table configs, read from Pinot's JSON unchanged.

``TableConfig.from_json(data, schema)`` parses every section we act on into typed views and
keeps the whole document, so ``to_json()`` round-trips it, unknown keys included. Keys that are
kept but not acted on are listed in ``ignored_keys`` (e.g. ``tierConfigs``). Class names of
Java plugins (decoders, consumer factories, file systems) are kept as given, never rejected.
"""

from __future__ import annotations

import copy
import dataclasses

from engine.common.errors import ConfigError
from engine.spi.schema import Schema, _load_json
from engine.spi.table_config_model import (
    ColumnPartitionConfig,
    FieldConfig,
    IngestionConfig,
    SegmentsConfig,
    StarTreeIndexConfig,
    TenantConfig,
    TransformConfig,
    as_bool,
    as_dict,
    as_str_list,
)

__all__ = [
    "ColumnPartitionConfig",
    "FieldConfig",
    "IndexingConfig",
    "IngestionConfig",
    "SegmentsConfig",
    "StarTreeIndexConfig",
    "TableConfig",
    "TenantConfig",
    "TransformConfig",
]

# Top-level keys something in Sprig acts on. Everything else is kept and reported.
_ACTED_ON = {
    "tableName",
    "tableType",
    "segmentsConfig",
    "tableIndexConfig",
    "fieldConfigList",
    "ingestionConfig",
    "tenants",
    "task",
    "routing",
    "query",
    "quota",
    "upsertConfig",
    "dedupConfig",
    "metadata",
    "isDimTable",
}
_INDEX_KEYS_ACTED_ON = {
    "invertedIndexColumns",
    "rangeIndexColumns",
    "bloomFilterColumns",
    "bloomFilterConfigs",
    "sortedColumn",
    "noDictionaryColumns",
    "noDictionaryConfig",
    "starTreeIndexConfigs",
    "enableDefaultStarTree",
    "segmentPartitionConfig",
    "loadMode",
    "nullHandlingEnabled",
    "streamConfigs",
}
# Index types a field config may name that the segment writer builds.
_BUILT_INDEX_TYPES = {
    "INVERTED",
    "RANGE",
    "BLOOM",
    "BLOOM_FILTER",
    "SORTED",
    "DICTIONARY",
    "FORWARD",
}


@dataclasses.dataclass(frozen=True)
class IndexingConfig:
    """``tableIndexConfig``. ``sorted_column`` is a list as in Pinot (only the first is used)."""

    inverted_index_columns: list[str] = dataclasses.field(default_factory=list)
    range_index_columns: list[str] = dataclasses.field(default_factory=list)
    bloom_filter_columns: list[str] = dataclasses.field(default_factory=list)
    bloom_filter_configs: dict = dataclasses.field(default_factory=dict)
    sorted_column: list[str] = dataclasses.field(default_factory=list)
    no_dictionary_columns: list[str] = dataclasses.field(default_factory=list)
    no_dictionary_config: dict = dataclasses.field(default_factory=dict)
    star_tree_configs: list[StarTreeIndexConfig] = dataclasses.field(default_factory=list)
    enable_default_star_tree: bool = False
    segment_partition_config: dict[str, ColumnPartitionConfig] = dataclasses.field(
        default_factory=dict
    )
    load_mode: str = "MMAP"
    null_handling_enabled: bool = False
    stream_configs: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict, path: str = "tableIndexConfig") -> IndexingConfig:
        trees = raw.get("starTreeIndexConfigs") or []
        if not isinstance(trees, list):
            raise ConfigError(f"{path}.starTreeIndexConfigs", "expected a list")
        partition = as_dict(raw.get("segmentPartitionConfig"), f"{path}.segmentPartitionConfig")
        pmap = as_dict(
            partition.get("columnPartitionMap"), f"{path}.segmentPartitionConfig.columnPartitionMap"
        )
        return cls(
            inverted_index_columns=as_str_list(
                raw.get("invertedIndexColumns"), f"{path}.invertedIndexColumns"
            ),
            range_index_columns=as_str_list(
                raw.get("rangeIndexColumns"), f"{path}.rangeIndexColumns"
            ),
            bloom_filter_columns=as_str_list(
                raw.get("bloomFilterColumns"), f"{path}.bloomFilterColumns"
            ),
            bloom_filter_configs=as_dict(
                raw.get("bloomFilterConfigs"), f"{path}.bloomFilterConfigs"
            ),
            sorted_column=as_str_list(raw.get("sortedColumn"), f"{path}.sortedColumn"),
            no_dictionary_columns=as_str_list(
                raw.get("noDictionaryColumns"), f"{path}.noDictionaryColumns"
            ),
            no_dictionary_config=as_dict(
                raw.get("noDictionaryConfig"), f"{path}.noDictionaryConfig"
            ),
            star_tree_configs=[
                StarTreeIndexConfig.from_json(t, f"{path}.starTreeIndexConfigs[{i}]")
                for i, t in enumerate(trees)
            ],
            enable_default_star_tree=as_bool(
                raw.get("enableDefaultStarTree"), f"{path}.enableDefaultStarTree"
            ),
            segment_partition_config={
                col: ColumnPartitionConfig.from_json(
                    spec, f"{path}.segmentPartitionConfig.columnPartitionMap.{col}"
                )
                for col, spec in pmap.items()
            },
            load_mode=str(raw.get("loadMode", "MMAP")).upper(),
            null_handling_enabled=as_bool(
                raw.get("nullHandlingEnabled"), f"{path}.nullHandlingEnabled"
            ),
            stream_configs=as_dict(raw.get("streamConfigs"), f"{path}.streamConfigs"),
        )


class TableConfig:
    """A parsed table config. Typed sections: ``segments_config``, ``index_config``,
    ``field_config_list``, ``ingestion_config``, ``tenants``, ``task_configs``,
    ``stream_configs``. The ``*_columns`` properties merge ``tableIndexConfig`` with
    ``fieldConfigList``, which is what the segment writer uses."""

    def __init__(self, raw: dict):
        self._raw = raw
        name = raw.get("tableName")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("tableName", "a table config needs a non-empty tableName")
        table_type = str(raw.get("tableType", "")).upper()
        if table_type not in ("OFFLINE", "REALTIME"):
            raise ConfigError(
                "tableType", f"expected OFFLINE or REALTIME, got {raw.get('tableType')!r}"
            )
        # Pinot accepts "myTable_OFFLINE" as a name; the raw name is without the suffix.
        for suffix in ("_OFFLINE", "_REALTIME"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        self.table_name = name
        self.table_type = table_type
        self.segments_config = SegmentsConfig.from_json(
            as_dict(raw.get("segmentsConfig"), "segmentsConfig")
        )
        self.index_config = IndexingConfig.from_json(
            as_dict(raw.get("tableIndexConfig"), "tableIndexConfig")
        )
        flist = raw.get("fieldConfigList") or []
        if not isinstance(flist, list):
            raise ConfigError("fieldConfigList", "expected a list")
        self.field_config_list = [
            FieldConfig.from_json(item, f"fieldConfigList[{i}]") for i, item in enumerate(flist)
        ]
        self.ingestion_config = IngestionConfig.from_json(
            as_dict(raw.get("ingestionConfig"), "ingestionConfig")
        )
        tenants = as_dict(raw.get("tenants"), "tenants")
        self.tenants = TenantConfig(
            broker=tenants.get("broker") or "DefaultTenant",
            server=tenants.get("server") or "DefaultTenant",
            tag_override_config=as_dict(
                tenants.get("tagOverrideConfig"), "tenants.tagOverrideConfig"
            ),
        )
        task = as_dict(raw.get("task"), "task")
        tmap = as_dict(task.get("taskTypeConfigsMap"), "task.taskTypeConfigsMap")
        self.task_configs: dict[str, dict] = {
            k: dict(as_dict(v, f"task.taskTypeConfigsMap.{k}")) for k, v in tmap.items()
        }
        if self.table_type == "REALTIME" and not self.stream_configs:
            raise ConfigError(
                "ingestionConfig.streamIngestionConfig.streamConfigMaps",
                "a REALTIME table needs stream configs",
            )

    @classmethod
    def from_json(cls, data: dict | str | bytes, schema: Schema | None = None) -> TableConfig:
        """Parse a table config; when ``schema`` is given also check every column it names.
        Raises ConfigError with ``.field`` set to the JSON path of the problem."""
        config = cls(_load_json(data, "table config"))
        if schema is not None:
            from engine.spi.table_config_validation import validate_against_schema

            validate_against_schema(config, schema)
        return config

    def to_json(self) -> dict:
        """The original document, unknown keys included."""
        return copy.deepcopy(self._raw)

    @property
    def table_name_with_type(self) -> str:
        return f"{self.table_name}_{self.table_type}"

    @property
    def stream_configs(self) -> dict:
        """The first stream config map (``ingestionConfig.streamIngestionConfig``), else the
        legacy ``tableIndexConfig.streamConfigs``; empty for OFFLINE tables."""
        maps = self.ingestion_config.stream_config_maps
        if maps:
            return dict(maps[0])
        return dict(self.index_config.stream_configs)

    @property
    def time_column_name(self) -> str | None:
        return self.segments_config.time_column_name

    @property
    def push_frequency(self) -> str | None:
        """``batchIngestionConfig.segmentIngestionFrequency``, else the deprecated
        ``segmentsConfig.segmentPushFrequency`` (HOURLY/DAILY; sets the hybrid time boundary)."""
        value = (
            self.ingestion_config.segment_ingestion_frequency
            or self.segments_config.segment_push_frequency
        )
        return str(value).upper() if value else None

    @property
    def push_type(self) -> str | None:
        """``batchIngestionConfig.segmentIngestionType``, else ``segmentsConfig.segmentPushType``
        (APPEND/REFRESH)."""
        value = (
            self.ingestion_config.segment_ingestion_type or self.segments_config.segment_push_type
        )
        return str(value).upper() if value else None

    @property
    def ignored_keys(self) -> list[str]:
        """JSON paths of keys that are kept but that nothing in Sprig acts on."""
        out = [k for k in self._raw if k not in _ACTED_ON]
        index = as_dict(self._raw.get("tableIndexConfig"), "tableIndexConfig")
        out += [f"tableIndexConfig.{k}" for k in index if k not in _INDEX_KEYS_ACTED_ON]
        for i, fc in enumerate(self.field_config_list):
            raw = self._raw["fieldConfigList"][i]
            out += [
                f"fieldConfigList[{i}].{k}"
                for k in raw
                if k in ("tierOverwrites", "timestampConfig")
            ]
            out += [
                f"fieldConfigList[{i}].indexes.{t.lower()}"
                for t in fc.index_types
                if t not in _BUILT_INDEX_TYPES
            ]
        ingestion = as_dict(self._raw.get("ingestionConfig"), "ingestionConfig")
        out += [
            f"ingestionConfig.{k}"
            for k in ingestion
            if k in ("complexTypeConfig", "aggregationConfigs", "schemaConformingTransformerConfig")
        ]
        return out

    # Effective per-column settings, merging tableIndexConfig with fieldConfigList.
    def _field_configs_with(self, *index_types: str) -> list[str]:
        return [fc.name for fc in self.field_config_list if set(index_types) & set(fc.index_types)]

    @property
    def inverted_index_columns(self) -> list[str]:
        cols = self.index_config.inverted_index_columns + self._field_configs_with("INVERTED")
        return list(dict.fromkeys(cols))

    @property
    def range_index_columns(self) -> list[str]:
        cols = self.index_config.range_index_columns + self._field_configs_with("RANGE")
        return list(dict.fromkeys(cols))

    @property
    def bloom_filter_columns(self) -> list[str]:
        cols = (
            self.index_config.bloom_filter_columns
            + list(self.index_config.bloom_filter_configs)
            + self._field_configs_with("BLOOM", "BLOOM_FILTER")
        )
        return list(dict.fromkeys(cols))

    @property
    def no_dictionary_columns(self) -> list[str]:
        raw_fields = [fc.name for fc in self.field_config_list if fc.encoding_type == "RAW"]
        cols = (
            self.index_config.no_dictionary_columns
            + list(self.index_config.no_dictionary_config)
            + raw_fields
        )
        return list(dict.fromkeys(cols))

    @property
    def sorted_column(self) -> str | None:
        return self.index_config.sorted_column[0] if self.index_config.sorted_column else None

    def __repr__(self) -> str:
        return f"TableConfig({self.table_name_with_type!r})"
