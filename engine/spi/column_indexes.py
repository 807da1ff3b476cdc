"""Which columns get a dictionary, an inverted, a range or a bloom index, resolved as Pinot does.

Pinot reads each index type from two places: the newer ``fieldConfigList[].indexes`` map and
the older lists (``tableIndexConfig.invertedIndexColumns``, ``noDictionaryColumns``, a field's
``indexTypes`` or ``encodingType``). Its rules, per index type and column:

- When only one place configures the column, that place decides.
- When the ``indexes`` map and an older list both configure it, Pinot refuses the config
  ("declared in two different ways").
- ``encodingType: RAW`` alone turns the dictionary off, but ``indexes.dictionary`` next to it
  keeps one (a RAW forward index with a standalone dictionary): the ``indexes`` map decides.
- A DICTIONARY field config for a column listed in ``noDictionaryColumns`` is a contradiction.

Sprig stores a column with a dictionary dictionary-encoded; the forward-index encoding is a
storage detail that does not change any answer.
"""

from __future__ import annotations

import dataclasses

from engine.common.errors import ConfigError

# ``indexes`` keys, by the index types Sprig resolves.
_INDEX_KEYS = {
    "dictionary": "dictionary",
    "inverted": "inverted",
    "range": "range",
    "bloom": "bloom",
}


@dataclasses.dataclass(frozen=True)
class ResolvedIndexes:
    """Column names, in config order. ``no_dictionary`` holds the columns stored raw."""

    no_dictionary: list[str]
    inverted: list[str]
    range: list[str]
    bloom: list[str]
    # column -> JSON path that turned an index on, for error messages
    origin: dict[tuple[str, str], str]


def _enabled(spec: dict) -> bool:
    """An ``indexes`` entry is on unless it says ``disabled: true`` or ``enabled: false``."""
    disabled = str(spec.get("disabled", False)).lower() == "true"
    enabled = str(spec.get("enabled", True)).lower() != "false"
    return enabled and not disabled


def _from_indexes_map(field_configs) -> dict[str, dict[str, tuple[bool, str]]]:
    """{index type: {column: (enabled, path)}} from ``fieldConfigList[].indexes``."""
    out: dict[str, dict[str, tuple[bool, str]]] = {t: {} for t in _INDEX_KEYS.values()}
    for i, fc in enumerate(field_configs):
        for key, spec in fc.indexes.items():
            kind = _INDEX_KEYS.get(key)
            if kind is not None:
                out[kind][fc.name] = (_enabled(spec), f"fieldConfigList[{i}].indexes.{key}")
    return out


def _legacy(index, field_configs) -> dict[str, dict[str, tuple[bool, str]]]:
    """{index type: {column: (enabled, path)}} from the older lists; earlier sources win, as
    in Pinot's fallback order."""
    out: dict[str, dict[str, tuple[bool, str]]] = {t: {} for t in _INDEX_KEYS.values()}

    def put(kind: str, column: str, enabled: bool, path: str) -> None:
        out[kind].setdefault(column, (enabled, path))

    for col in index.no_dictionary_config:
        put("dictionary", col, False, f"tableIndexConfig.noDictionaryConfig.{col}")
    for i, col in enumerate(index.no_dictionary_columns):
        put("dictionary", col, False, f"tableIndexConfig.noDictionaryColumns[{i}]")
    for i, col in enumerate(index.inverted_index_columns):
        put("inverted", col, True, f"tableIndexConfig.invertedIndexColumns[{i}]")
    for i, col in enumerate(index.range_index_columns):
        put("range", col, True, f"tableIndexConfig.rangeIndexColumns[{i}]")
    for i, col in enumerate(index.bloom_filter_columns):
        put("bloom", col, True, f"tableIndexConfig.bloomFilterColumns[{i}]")
    for col in index.bloom_filter_configs:
        put("bloom", col, True, f"tableIndexConfig.bloomFilterConfigs.{col}")
    for i, fc in enumerate(field_configs):
        legacy_types = set(fc.legacy_index_types)
        path = f"fieldConfigList[{i}]"
        if "INVERTED" in legacy_types:
            put("inverted", fc.name, True, f"{path}.indexTypes")
        if "RANGE" in legacy_types:
            put("range", fc.name, True, f"{path}.indexTypes")
        if legacy_types & {"BLOOM", "BLOOM_FILTER"}:
            put("bloom", fc.name, True, f"{path}.indexTypes")
    return out


def resolve(index, field_configs) -> ResolvedIndexes:
    """Resolve ``index`` (the IndexingConfig) and ``field_configs`` per column; raises
    ConfigError naming the second place when one index is configured in both forms."""
    for i, fc in enumerate(field_configs):
        if fc.encoding_type == "DICTIONARY" and (
            fc.name in index.no_dictionary_columns or fc.name in index.no_dictionary_config
        ):
            raise ConfigError(
                f"fieldConfigList[{i}].encodingType",
                f"FieldConfig encoding type is different from indexingConfig for column "
                f"{fc.name!r}: DICTIONARY here, but tableIndexConfig lists it as no-dictionary",
            )
    new = _from_indexes_map(field_configs)
    old = _legacy(index, field_configs)
    decided: dict[str, dict[str, tuple[bool, str]]] = {}
    for kind in _INDEX_KEYS.values():
        for column, (_, path) in new[kind].items():
            if column in old[kind]:
                raise ConfigError(
                    path,
                    f"the {kind} index of column {column!r} is declared in two different ways: "
                    f"here and at {old[kind][column][1]}; keep one",
                )
        decided[kind] = {**old[kind], **new[kind]}
    # encodingType RAW turns the dictionary off unless the indexes map configures it.
    for i, fc in enumerate(field_configs):
        if fc.encoding_type == "RAW" and fc.name not in decided["dictionary"]:
            decided["dictionary"][fc.name] = (False, f"fieldConfigList[{i}].encodingType")
    origin = {(kind, col): path for kind, cols in decided.items()
              for col, (_, path) in cols.items()}  # fmt: skip

    def on(kind: str) -> list[str]:
        return [col for col, (enabled, _) in decided[kind].items() if enabled]

    no_dict = [col for col, (enabled, _) in decided["dictionary"].items() if not enabled]
    return ResolvedIndexes(no_dict, on("inverted"), on("range"), on("bloom"), origin)
