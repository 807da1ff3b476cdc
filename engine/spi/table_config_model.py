"""Typed views of the sections of a Pinot table config. Each ``from_json`` takes the section's
JSON and the path it sits at, and raises ConfigError naming the bad key."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.common.errors import ConfigError
from engine.spi.partition import partition_function

STAR_TREE_FUNCTIONS = frozenset(
    {
        "COUNT",
        "SUM",
        "MIN",
        "MAX",
        "AVG",
        "MINMAXRANGE",
        "SUMMV",
        "COUNTMV",
        "MINMV",
        "MAXMV",
        "AVGMV",
    }
)
# Star-tree aggregations Pinot has (its ValueAggregatorFactory) beyond the ones Sprig builds.
PINOT_STAR_TREE_FUNCTIONS = frozenset(
    {
        "SUMPRECISION",
        "DISTINCTCOUNTBITMAP",
        "DISTINCTCOUNTHLL",
        "DISTINCTCOUNTRAWHLL",
        "DISTINCTCOUNTHLLPLUS",
        "DISTINCTCOUNTRAWHLLPLUS",
        "DISTINCTCOUNTTHETASKETCH",
        "DISTINCTCOUNTRAWTHETASKETCH",
        "DISTINCTCOUNTTUPLESKETCH",
        "DISTINCTCOUNTRAWINTEGERSUMTUPLESKETCH",
        "SUMVALUESINTEGERSUMTUPLESKETCH",
        "AVGVALUEINTEGERSUMTUPLESKETCH",
        "DISTINCTCOUNTCPCSKETCH",
        "DISTINCTCOUNTRAWCPCSKETCH",
        "DISTINCTCOUNTULL",
        "DISTINCTCOUNTRAWULL",
        "PERCENTILEEST",
        "PERCENTILERAWEST",
        "PERCENTILETDIGEST",
        "PERCENTILERAWTDIGEST",
    }
)


def as_dict(value: Any, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def as_str_list(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # Pinot accepts a bare string for single-entry lists
        return [value]
    if not isinstance(value, list):
        raise ConfigError(path, f"expected a list of column names, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{path}[{i}]", f"expected a string, got {item!r}")
    return list(value)


def as_int(
    value: Any, path: str, *, default: int | None = None, minimum: int | None = None
) -> int | None:
    """Pinot writes many numbers as strings ("replication": "1"); accept both."""
    if value is None or value == "":
        return default
    try:
        out = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        out = None
    if out is None:
        raise ConfigError(path, f"expected an integer, got {value!r}")
    if minimum is not None and out < minimum:
        raise ConfigError(path, f"must be at least {minimum}, got {out}")
    return out


def as_bool(value: Any, path: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(path, f"expected true or false, got {value!r}")


@dataclasses.dataclass(frozen=True)
class SegmentsConfig:
    time_column_name: str | None = None
    time_type: str | None = None
    replication: int = 1
    replicas_per_partition: int | None = None
    retention_time_unit: str | None = None
    retention_time_value: int | None = None
    segment_push_type: str | None = None
    segment_push_frequency: str | None = None
    schema_name: str | None = None
    peer_segment_download_scheme: str | None = None

    @classmethod
    def from_json(cls, raw: dict, path: str = "segmentsConfig") -> SegmentsConfig:
        unit = raw.get("retentionTimeUnit")
        if unit is not None and str(unit).upper() not in (
            "NANOSECONDS",  # Java TimeUnit names, as Pinot accepts them
            "MICROSECONDS",
            "MILLISECONDS",
            "SECONDS",
            "MINUTES",
            "HOURS",
            "DAYS",
        ):
            raise ConfigError(f"{path}.retentionTimeUnit", f"unknown time unit {unit!r}")
        tcn = raw.get("timeColumnName")
        if tcn is not None and not isinstance(tcn, str):
            raise ConfigError(f"{path}.timeColumnName", f"expected a column name, got {tcn!r}")
        return cls(
            time_column_name=tcn or None,
            time_type=raw.get("timeType"),
            replication=as_int(raw.get("replication"), f"{path}.replication", default=1, minimum=1),
            replicas_per_partition=as_int(
                raw.get("replicasPerPartition"), f"{path}.replicasPerPartition", minimum=1
            ),
            retention_time_unit=str(unit).upper() if unit is not None else None,
            retention_time_value=as_int(
                raw.get("retentionTimeValue"), f"{path}.retentionTimeValue", minimum=0
            ),
            segment_push_type=raw.get("segmentPushType"),
            segment_push_frequency=raw.get("segmentPushFrequency"),
            schema_name=raw.get("schemaName"),
            peer_segment_download_scheme=raw.get("peerSegmentDownloadScheme"),
        )


@dataclasses.dataclass(frozen=True)
class StarTreeIndexConfig:
    """``functionColumnPairs`` entries are ``FUNCTION__column`` (``COUNT__*`` for COUNT(*))."""

    dimensions_split_order: list[str]
    function_column_pairs: list[str]
    skip_star_node_creation_for_dimensions: list[str] = dataclasses.field(default_factory=list)
    max_leaf_records: int = 10_000
    # pairs Pinot accepts whose pre-aggregation Sprig does not build (reported as warnings)
    unbuilt_function_column_pairs: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_json(cls, raw: Any, path: str) -> StarTreeIndexConfig:
        raw = as_dict(raw, path)
        dims = as_str_list(raw.get("dimensionsSplitOrder"), f"{path}.dimensionsSplitOrder")
        if not dims:
            raise ConfigError(f"{path}.dimensionsSplitOrder", "needs at least one dimension")
        has_pairs = raw.get("functionColumnPairs") is not None
        has_aggs = raw.get("aggregationConfigs") is not None
        if has_pairs == has_aggs:  # Pinot: exactly one of the two
            raise ConfigError(
                f"{path}.functionColumnPairs",
                "either 'functionColumnPairs' or 'aggregationConfigs' must be specified, but "
                "not both",
            )
        key = "functionColumnPairs" if has_pairs else "aggregationConfigs"
        pairs = as_str_list(raw.get("functionColumnPairs"), f"{path}.functionColumnPairs")
        aggs = raw.get("aggregationConfigs") or []
        if not isinstance(aggs, list):
            raise ConfigError(f"{path}.aggregationConfigs", "expected a list")
        for i, agg in enumerate(aggs):
            agg = as_dict(agg, f"{path}.aggregationConfigs[{i}]")
            pairs.append(f"{agg.get('aggregationFunction', '')}__{agg.get('columnName', '')}")
        built, skipped = [], []
        for i, pair in enumerate(pairs):
            function, sep, column = pair.partition("__")
            if not sep or not column or not function:
                raise ConfigError(f"{path}.{key}[{i}]", f"{pair!r} is not FUNCTION__column")
            canonical = _canonical_pair(pair)
            if canonical in built or canonical in skipped:
                raise ConfigError(f"{path}.{key}[{i}]", f"duplicate function column pair {pair!r}")
            if column == "*" and function.upper() != "COUNT":
                raise ConfigError(
                    f"{path}.{key}[{i}]", f"{function} needs a column; only COUNT takes '*'"
                )
            if function.upper() in STAR_TREE_FUNCTIONS:
                built.append(canonical)
            elif function.upper() in PINOT_STAR_TREE_FUNCTIONS:
                skipped.append(canonical)  # Pinot has it; Sprig does not pre-aggregate it yet
            else:
                raise ConfigError(
                    f"{path}.{key}[{i}]",
                    f"{function!r} is not a star-tree aggregation function; expected one of "
                    + ", ".join(sorted(STAR_TREE_FUNCTIONS | PINOT_STAR_TREE_FUNCTIONS)),
                )
        return cls(
            dimensions_split_order=dims,
            function_column_pairs=built,
            unbuilt_function_column_pairs=skipped,
            skip_star_node_creation_for_dimensions=as_str_list(
                raw.get("skipStarNodeCreationForDimensions"),
                f"{path}.skipStarNodeCreationForDimensions",
            ),
            max_leaf_records=as_int(
                raw.get("maxLeafRecords"), f"{path}.maxLeafRecords", default=10_000, minimum=1
            ),
        )

    def to_json(self) -> dict:
        return {
            "dimensionsSplitOrder": list(self.dimensions_split_order),
            "skipStarNodeCreationForDimensions": list(self.skip_star_node_creation_for_dimensions),
            "functionColumnPairs": list(self.function_column_pairs),
            "maxLeafRecords": self.max_leaf_records,
        }


def _canonical_pair(pair: str) -> str:
    function, _, column = pair.partition("__")
    return f"{function.upper()}__{column}"


@dataclasses.dataclass(frozen=True)
class ColumnPartitionConfig:
    function_name: str
    num_partitions: int
    function_config: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: Any, path: str) -> ColumnPartitionConfig:
        raw = as_dict(raw, path)
        num = as_int(raw.get("numPartitions"), f"{path}.numPartitions", minimum=1)
        if num is None:
            raise ConfigError(f"{path}.numPartitions", "numPartitions is required")
        # engine.spi.partition owns the names (case-insensitive) and each function's config
        function = partition_function(
            raw.get("functionName"), num, raw.get("functionConfig"), path=f"{path}."
        )
        return cls(function.name, num, function.function_config)


@dataclasses.dataclass(frozen=True)
class FieldConfig:
    """One ``fieldConfigList`` entry. ``index_types`` holds upper-case index names from either
    ``indexTypes``/``indexType`` or the keys of ``indexes`` whose ``enabled`` is not false."""

    name: str
    encoding_type: str = "DICTIONARY"
    index_types: tuple[str, ...] = ()
    indexes: dict = dataclasses.field(default_factory=dict)
    legacy_index_types: tuple[str, ...] = ()  # from ``indexTypes``/``indexType`` only
    properties: dict = dataclasses.field(default_factory=dict)
    compression_codec: str | None = None

    @classmethod
    def from_json(cls, raw: Any, path: str) -> FieldConfig:
        raw = as_dict(raw, path)
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}.name", "a field config needs a column name")
        encoding = str(raw.get("encodingType", "DICTIONARY")).upper()
        if encoding not in ("DICTIONARY", "RAW"):
            raise ConfigError(
                f"{path}.encodingType", f"expected DICTIONARY or RAW, got {encoding!r}"
            )
        types = as_str_list(raw.get("indexTypes"), f"{path}.indexTypes")
        if raw.get("indexType"):
            types.append(str(raw["indexType"]))
        legacy = tuple(dict.fromkeys(t.upper() for t in types))
        indexes = as_dict(raw.get("indexes"), f"{path}.indexes")
        for key, spec in indexes.items():
            enabled = as_dict(spec, f"{path}.indexes.{key}").get("enabled", True)
            if as_bool(enabled, f"{path}.indexes.{key}.enabled", True) and not as_dict(
                spec, ""
            ).get("disabled", False):
                types.append(key)
        return cls(
            name=name,
            encoding_type=encoding,
            index_types=tuple(dict.fromkeys(t.upper() for t in types)),
            indexes=indexes,
            legacy_index_types=legacy,
            properties=as_dict(raw.get("properties"), f"{path}.properties"),
            compression_codec=raw.get("compressionCodec"),
        )


@dataclasses.dataclass(frozen=True)
class TransformConfig:
    column_name: str
    transform_function: str


@dataclasses.dataclass(frozen=True)
class IngestionConfig:
    transform_configs: list[TransformConfig] = dataclasses.field(default_factory=list)
    filter_function: str | None = None
    continue_on_error: bool = False
    stream_config_maps: list[dict] = dataclasses.field(default_factory=list)
    batch_config_maps: list[dict] = dataclasses.field(default_factory=list)
    segment_ingestion_type: str | None = None
    segment_ingestion_frequency: str | None = None

    @property
    def filter_config(self) -> dict | None:
        """``filterConfig`` as Pinot writes it, or None."""
        return {"filterFunction": self.filter_function} if self.filter_function else None

    @classmethod
    def from_json(cls, raw: dict, path: str = "ingestionConfig") -> IngestionConfig:
        transforms = []
        tlist = raw.get("transformConfigs") or []
        if not isinstance(tlist, list):
            raise ConfigError(f"{path}.transformConfigs", "expected a list")
        for i, item in enumerate(tlist):
            item = as_dict(item, f"{path}.transformConfigs[{i}]")
            col, fn = item.get("columnName"), item.get("transformFunction")
            if not isinstance(col, str) or not col:
                raise ConfigError(
                    f"{path}.transformConfigs[{i}].columnName", "a column name is required"
                )
            if not isinstance(fn, str) or not fn.strip():
                raise ConfigError(
                    f"{path}.transformConfigs[{i}].transformFunction", "a function is required"
                )
            transforms.append(TransformConfig(col, fn))
        filt = as_dict(raw.get("filterConfig"), f"{path}.filterConfig").get("filterFunction")
        if filt is not None and not isinstance(filt, str):
            raise ConfigError(f"{path}.filterConfig.filterFunction", "expected a string")
        stream = as_dict(raw.get("streamIngestionConfig"), f"{path}.streamIngestionConfig")
        maps = stream.get("streamConfigMaps") or []
        if not isinstance(maps, list) or not all(isinstance(m, dict) for m in maps):
            raise ConfigError(
                f"{path}.streamIngestionConfig.streamConfigMaps", "expected a list of objects"
            )
        batch = as_dict(raw.get("batchIngestionConfig"), f"{path}.batchIngestionConfig")
        bmaps = batch.get("batchConfigMaps") or []
        if not isinstance(bmaps, list) or not all(isinstance(m, dict) for m in bmaps):
            raise ConfigError(
                f"{path}.batchIngestionConfig.batchConfigMaps", "expected a list of objects"
            )
        return cls(
            transform_configs=transforms,
            filter_function=filt,
            continue_on_error=as_bool(raw.get("continueOnError"), f"{path}.continueOnError"),
            stream_config_maps=[dict(m) for m in maps],
            batch_config_maps=[dict(m) for m in bmaps],
            segment_ingestion_type=batch.get("segmentIngestionType"),
            segment_ingestion_frequency=batch.get("segmentIngestionFrequency"),
        )


@dataclasses.dataclass(frozen=True)
class TenantConfig:
    broker: str = "DefaultTenant"
    server: str = "DefaultTenant"
    tag_override_config: dict = dataclasses.field(default_factory=dict)
