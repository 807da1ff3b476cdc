"""Pinot's ``upsertConfig`` and ``dedupConfig``, typed, with Pinot's defaults.

``UpsertConfig.of(table_config)`` / ``DedupConfig.of(table_config)`` return None when the table
does not upsert (no section, or ``mode: NONE``) or dedup (no section, or ``dedupEnabled:
false``). Legacy keys are read as Pinot reads them: ``comparisonColumn`` (a string) becomes
``comparisonColumns``, ``enableSnapshot``/``enablePreload: true`` become ``ENABLE``.
The validation rules are ``engine.spi.upsert_validation``.
"""

from __future__ import annotations

import dataclasses
import enum

from engine.common.errors import ConfigError
from engine.spi.table_config_model import as_bool, as_dict


class UpsertMode(enum.StrEnum):
    FULL = "FULL"
    PARTIAL = "PARTIAL"
    NONE = "NONE"


class Strategy(enum.StrEnum):
    """Partial-upsert merge strategies (Pinot's ``UpsertConfig.Strategy``)."""

    OVERWRITE = "OVERWRITE"
    FORCE_OVERWRITE = "FORCE_OVERWRITE"
    IGNORE = "IGNORE"
    INCREMENT = "INCREMENT"
    APPEND = "APPEND"
    UNION = "UNION"
    MAX = "MAX"
    MIN = "MIN"


class HashFunction(enum.StrEnum):
    NONE = "NONE"
    MD5 = "MD5"
    MURMUR3 = "MURMUR3"
    XXHASH = "XXHASH"
    XXH128 = "XXH128"
    UUID = "UUID"


class ConsistencyMode(enum.StrEnum):
    NONE = "NONE"
    SYNC = "SYNC"
    SNAPSHOT = "SNAPSHOT"


class Toggle(enum.StrEnum):
    """``snapshot``/``preload``/``ignoreNonDefaultTiers``: DEFAULT defers to the server."""

    ENABLE = "ENABLE"
    DISABLE = "DISABLE"
    DEFAULT = "DEFAULT"

    def resolve(self, server_default: bool) -> bool:
        return self is Toggle.ENABLE or (self is Toggle.DEFAULT and server_default)


def _enum(kind, value, path: str, default):
    if value is None:
        return default
    try:
        return kind(str(value).upper())
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ConfigError(path, f"{value!r} is not one of {allowed}") from None


def _number(value, path: str, default: float = 0.0) -> float:
    if value is None:
        return default
    if isinstance(value, bool):
        raise ConfigError(path, f"expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(path, f"expected a number, got {value!r}") from None


def _int(value, path: str, default: int) -> int:
    return int(_number(value, path, default))


def _toggle(raw: dict, key: str, legacy: str, path: str) -> Toggle:
    found = _enum(Toggle, raw.get(key), f"{path}.{key}", None)
    if found is not None:
        return found
    return Toggle.ENABLE if as_bool(raw.get(legacy), f"{path}.{legacy}") else Toggle.DEFAULT


@dataclasses.dataclass(frozen=True)
class UpsertConfig:
    mode: UpsertMode = UpsertMode.FULL
    comparison_columns: tuple[str, ...] = ()  # empty: the time column
    hash_function: HashFunction = HashFunction.NONE
    partial_upsert_strategies: dict[str, Strategy] = dataclasses.field(default_factory=dict)
    default_partial_upsert_strategy: Strategy = Strategy.OVERWRITE
    partial_upsert_merger_class: str | None = None
    delete_record_column: str | None = None
    drop_out_of_order_record: bool = False
    out_of_order_record_column: str | None = None
    metadata_ttl: float = 0.0
    deleted_keys_ttl: float = 0.0
    enable_deleted_keys_compaction_consistency: bool = False
    enable_commit_time_compaction: bool = False
    snapshot: Toggle = Toggle.DEFAULT
    preload: Toggle = Toggle.DEFAULT
    consistency_mode: ConsistencyMode = ConsistencyMode.NONE
    upsert_view_refresh_interval_ms: int = 3000
    new_segment_tracking_time_ms: int = 10000
    metadata_manager_class: str | None = None
    raw: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict, path: str = "upsertConfig") -> UpsertConfig:
        columns = raw.get("comparisonColumns")
        if columns is None and raw.get("comparisonColumn"):
            columns = [raw["comparisonColumn"]]
        if columns is not None and not isinstance(columns, list):
            raise ConfigError(f"{path}.comparisonColumns", "expected a list of column names")
        strategies = as_dict(raw.get("partialUpsertStrategies"), f"{path}.partialUpsertStrategies")
        return cls(
            mode=_enum(UpsertMode, raw.get("mode"), f"{path}.mode", UpsertMode.FULL),
            comparison_columns=tuple(str(c) for c in columns or ()),
            hash_function=_enum(
                HashFunction, raw.get("hashFunction"), f"{path}.hashFunction", HashFunction.NONE
            ),
            partial_upsert_strategies={
                str(col): _enum(Strategy, s, f"{path}.partialUpsertStrategies.{col}", None)
                for col, s in strategies.items()
            },
            default_partial_upsert_strategy=_enum(
                Strategy,
                raw.get("defaultPartialUpsertStrategy"),
                f"{path}.defaultPartialUpsertStrategy",
                Strategy.OVERWRITE,
            ),
            partial_upsert_merger_class=raw.get("partialUpsertMergerClass") or None,
            delete_record_column=raw.get("deleteRecordColumn") or None,
            drop_out_of_order_record=as_bool(
                raw.get("dropOutOfOrderRecord"), f"{path}.dropOutOfOrderRecord"
            ),
            out_of_order_record_column=raw.get("outOfOrderRecordColumn") or None,
            metadata_ttl=_number(raw.get("metadataTTL"), f"{path}.metadataTTL"),
            deleted_keys_ttl=_number(raw.get("deletedKeysTTL"), f"{path}.deletedKeysTTL"),
            enable_deleted_keys_compaction_consistency=as_bool(
                raw.get("enableDeletedKeysCompactionConsistency"),
                f"{path}.enableDeletedKeysCompactionConsistency",
            ),
            enable_commit_time_compaction=as_bool(
                raw.get("enableCommitTimeCompaction"), f"{path}.enableCommitTimeCompaction"
            ),
            snapshot=_toggle(raw, "snapshot", "enableSnapshot", path),
            preload=_toggle(raw, "preload", "enablePreload", path),
            consistency_mode=_enum(
                ConsistencyMode,
                raw.get("consistencyMode"),
                f"{path}.consistencyMode",
                ConsistencyMode.NONE,
            ),
            upsert_view_refresh_interval_ms=_int(
                raw.get("upsertViewRefreshIntervalMs"), f"{path}.upsertViewRefreshIntervalMs", 3000
            ),
            new_segment_tracking_time_ms=_int(
                raw.get("newSegmentTrackingTimeMs"), f"{path}.newSegmentTrackingTimeMs", 10000
            ),
            metadata_manager_class=raw.get("metadataManagerClass") or None,
            raw=dict(raw),
        )

    @classmethod
    def of(cls, table_config) -> UpsertConfig | None:
        """The table's upsert config, None when it does not upsert."""
        raw = table_config.to_json().get("upsertConfig")
        if not isinstance(raw, dict):
            return None
        config = cls.from_json(raw)
        return None if config.mode is UpsertMode.NONE else config

    def comparison_columns_of(self, table_config) -> tuple[str, ...]:
        """``comparisonColumns``, else the table's time column."""
        if self.comparison_columns:
            return self.comparison_columns
        time_column = table_config.time_column_name
        return (time_column,) if time_column else ()

    def strategy_of(self, column: str) -> Strategy:
        return self.partial_upsert_strategies.get(column, self.default_partial_upsert_strategy)


@dataclasses.dataclass(frozen=True)
class DedupConfig:
    hash_function: HashFunction = HashFunction.NONE
    metadata_ttl: float = 0.0
    dedup_time_column: str | None = None  # None: the time column
    preload: Toggle = Toggle.DEFAULT
    ignore_non_default_tiers: Toggle = Toggle.DEFAULT
    metadata_manager_class: str | None = None
    raw: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict, path: str = "dedupConfig") -> DedupConfig:
        return cls(
            hash_function=_enum(
                HashFunction, raw.get("hashFunction"), f"{path}.hashFunction", HashFunction.NONE
            ),
            metadata_ttl=_number(raw.get("metadataTTL"), f"{path}.metadataTTL"),
            dedup_time_column=raw.get("dedupTimeColumn") or None,
            preload=_toggle(raw, "preload", "enablePreload", path),
            ignore_non_default_tiers=_enum(
                Toggle,
                raw.get("ignoreNonDefaultTiers"),
                f"{path}.ignoreNonDefaultTiers",
                Toggle.DEFAULT,
            ),
            metadata_manager_class=raw.get("metadataManagerClass") or None,
            raw=dict(raw),
        )

    @classmethod
    def of(cls, table_config) -> DedupConfig | None:
        raw = table_config.to_json().get("dedupConfig")
        if not isinstance(raw, dict):
            return None
        if not as_bool(raw.get("dedupEnabled", True), "dedupConfig.dedupEnabled"):
            return None
        return cls.from_json(raw)

    def time_column_of(self, table_config) -> str | None:
        return self.dedup_time_column or table_config.time_column_name
