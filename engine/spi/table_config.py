"""Pinot table configs, read from Pinot's JSON unchanged.

``TableConfig.from_json(data, schema)`` parses every section we act on into typed views and
keeps the whole document, so ``to_json()`` round-trips it, unknown keys included. Keys Pinot
does not know are in ``unrecognized_properties`` (as Pinot reports them); keys Pinot knows that
Sprig keeps without implementing are in ``warnings``. Class names of Java plugins (decoders,
consumer factories, file systems) are kept as given, never rejected.
"""

from __future__ import annotations

import copy
import dataclasses

from engine.common.errors import ConfigError
from engine.spi import compression, config_support
from engine.spi.column_indexes import ResolvedIndexes, resolve
from engine.spi.datetime_format import UNIT_MILLIS
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
from engine.spi.table_name import raw_name_for_type

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


def _sanitized(value, path: str) -> list[str]:
    """A column list without empty names, which Pinot drops before validating."""
    return [col for col in as_str_list(value, path) if col]


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
            inverted_index_columns=_sanitized(
                raw.get("invertedIndexColumns"), f"{path}.invertedIndexColumns"
            ),
            range_index_columns=_sanitized(
                raw.get("rangeIndexColumns"), f"{path}.rangeIndexColumns"
            ),
            bloom_filter_columns=_sanitized(
                raw.get("bloomFilterColumns"), f"{path}.bloomFilterColumns"
            ),
            bloom_filter_configs=as_dict(
                raw.get("bloomFilterConfigs"), f"{path}.bloomFilterConfigs"
            ),
            sorted_column=_sanitized(raw.get("sortedColumn"), f"{path}.sortedColumn"),
            no_dictionary_columns=_sanitized(
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
        self.table_name = raw_name_for_type(name, table_type)
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
        self.resolved_indexes: ResolvedIndexes = resolve(self.index_config, self.field_config_list)
        self._noted: list[dict] = []
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
    def push_frequency_ms(self) -> int:
        """One push-frequency unit in ms: an hour for HOURLY pushes, else a day. The hybrid
        time boundary is the newest OFFLINE end time minus this."""
        return UNIT_MILLIS["HOURS"] if self.push_frequency == "HOURLY" else UNIT_MILLIS["DAYS"]

    @property
    def push_type(self) -> str | None:
        """``batchIngestionConfig.segmentIngestionType``, else ``segmentsConfig.segmentPushType``
        (APPEND/REFRESH)."""
        value = (
            self.ingestion_config.segment_ingestion_type or self.segments_config.segment_push_type
        )
        return str(value).upper() if value else None

    @property
    def unrecognized_properties(self) -> dict:
        """Keys Pinot's config classes do not have: ``{json_pointer: value}``, as Pinot's
        ``unrecognizedProperties``."""
        return config_support.unrecognized_properties(self._raw)

    @property
    def warnings(self) -> list[dict]:
        """``[{"field", "message"}]`` for what Pinot knows and Sprig accepts without acting on
        it yet (tiers, upsert, replica-group assignment, unbuilt index types, ...)."""
        out = (
            config_support.not_implemented_warnings(
                self._raw, [fc.index_types for fc in self.field_config_list]
            )
            + list(self._noted)
            + compression.codec_warnings(self)
        )
        for t, tree in enumerate(self.index_config.star_tree_configs):
            for pair in tree.unbuilt_function_column_pairs:
                out.append({
                    "field": f"tableIndexConfig.starTreeIndexConfigs[{t}]",
                    "message": f"{pair} is not pre-aggregated; queries using it scan instead",
                })  # fmt: skip
        for i, fc in enumerate(self.field_config_list):
            if fc.encoding_type == "RAW" and fc.name not in self.no_dictionary_columns:
                out.append({
                    "field": f"fieldConfigList[{i}].encodingType",
                    "message": f"RAW with indexes.dictionary: {fc.name!r} is stored "
                    "dictionary-encoded (same results)",
                })  # fmt: skip
        return out

    def note(self, field: str, message: str) -> None:
        """Add a warning found by a check outside this module (e.g. an ingestion function
        the engine does not have yet)."""
        self._noted.append({"field": field, "message": message})

    # Effective per-column indexes: the indexes map and the older lists, resolved as Pinot does.
    @property
    def inverted_index_columns(self) -> list[str]:
        return list(self.resolved_indexes.inverted)

    @property
    def range_index_columns(self) -> list[str]:
        return list(self.resolved_indexes.range)

    @property
    def bloom_filter_columns(self) -> list[str]:
        return list(self.resolved_indexes.bloom)

    @property
    def no_dictionary_columns(self) -> list[str]:
        return list(self.resolved_indexes.no_dictionary)

    @property
    def compression_codecs(self) -> dict[str, str]:
        """``{column: codec}`` of the raw columns given a codec Sprig applies (LZ4, SNAPPY,
        ZSTANDARD, PASS_THROUGH); the others are stored with the default (ZSTANDARD)."""
        return compression.applied_codecs(self)

    @property
    def sorted_column(self) -> str | None:
        return self.index_config.sorted_column[0] if self.index_config.sorted_column else None

    def without_ingestion_transforms(self) -> TableConfig:
        """This config without ``ingestionConfig.transformConfigs`` and ``filterConfig``: for
        rebuilding rows that went through them already (a consuming segment's, a segment's
        that a minion rewrites), where applying them twice would, e.g., filter on columns
        that no longer exist."""
        raw = self.to_json()
        ingestion = dict(raw.get("ingestionConfig") or {})
        ingestion.pop("transformConfigs", None)
        ingestion.pop("filterConfig", None)
        raw["ingestionConfig"] = ingestion
        return TableConfig(raw)

    def __repr__(self) -> str:
        return f"TableConfig({self.table_name_with_type!r})"
