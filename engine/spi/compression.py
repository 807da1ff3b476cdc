"""Pinot's forward-index compression codecs (``FieldConfig.CompressionCodec``): which exist,
which Sprig applies, and Pinot's rules for where each may be used.

``fieldConfigList[].compressionCodec`` (or ``indexes.forward.compressionCodec``) chooses the
chunk codec of a raw (no-dictionary) column. PASS_THROUGH, SNAPPY, ZSTANDARD and LZ4 are
applied; GZIP, the CLP family, DELTA, DELTADELTA and MV_ENTRY_DICT are accepted where Pinot
accepts them and reported as warnings (the column keeps Sprig's default, ZSTANDARD).
"""

from __future__ import annotations

from engine.common.errors import ConfigError
from engine.common.types import DataType

PASS_THROUGH, SNAPPY, ZSTANDARD, LZ4 = "PASS_THROUGH", "SNAPPY", "ZSTANDARD", "LZ4"
APPLIED = (PASS_THROUGH, SNAPPY, ZSTANDARD, LZ4)
_RAW_ONLY = (*APPLIED, "GZIP")
_CLP = ("CLP", "CLPV2", "CLPV2_ZSTD", "CLPV2_LZ4")
_DELTA = ("DELTA", "DELTADELTA")
PINOT_CODECS = (*_RAW_ONLY, "MV_ENTRY_DICT", *_CLP, *_DELTA)


def field_codec(field_config) -> str | None:
    """The codec a field config names (upper case), from ``compressionCodec`` or the
    ``indexes.forward`` map; None when it names none."""
    codec = field_config.compression_codec
    forward = (field_config.indexes or {}).get("forward")
    if codec is None and isinstance(forward, dict):
        codec = forward.get("compressionCodec")
    return str(codec).strip().upper() if codec else None


def validate_codecs(config, schema, no_dictionary: set[str]) -> None:
    """Raise ConfigError where Pinot refuses a codec: an unknown name, a raw-only codec on a
    dictionary-encoded column (and MV_ENTRY_DICT on a raw or single-value one), CLP on a
    non-STRING column, DELTA on anything but a raw single-value INT/LONG."""
    for i, fc in enumerate(config.field_config_list):
        codec = field_codec(fc)
        if codec is None:
            continue
        path = f"fieldConfigList[{i}].compressionCodec"
        if codec not in PINOT_CODECS:
            raise ConfigError(path, f"unknown compression codec {codec!r} (Pinot's codecs: "
                              f"{', '.join(PINOT_CODECS)})")  # fmt: skip
        raw = fc.name in no_dictionary or fc.encoding_type == "RAW"
        spec = schema.field(fc.name) if schema.has_column(fc.name) else None
        if codec == "MV_ENTRY_DICT":
            if raw or (spec is not None and spec.single_value):
                raise ConfigError(path, f"Compression codec: {codec} is not applicable to "
                                  f"{'raw' if raw else 'single-value'} column: {fc.name}")  # fmt: skip
            continue
        if not raw:
            raise ConfigError(path, f"Compression codec: {codec} is not applicable to "
                              f"dictionary encoded column: {fc.name}")  # fmt: skip
        if spec is None:
            continue
        if codec in _CLP and spec.data_type not in (DataType.STRING, DataType.JSON):
            raise ConfigError(path, "Cannot apply CLP compression codec to column: "
                              f"{fc.name} of stored type other than STRING")  # fmt: skip
        if codec in _DELTA and (
            not spec.single_value or spec.data_type not in (DataType.INT, DataType.LONG)
        ):
            raise ConfigError(path, f"Compression codec {codec} can only be used on INT/LONG "
                              f"data types, not {spec.data_type} of column: {fc.name}")  # fmt: skip


def applied_codecs(config) -> dict[str, str]:
    """``{column: codec}`` of the raw columns whose codec Sprig applies."""
    out = {}
    for fc in config.field_config_list:
        codec = field_codec(fc)
        if codec in APPLIED:
            out[fc.name] = codec
    return out


def codec_warnings(config) -> list[dict]:
    """A warning per field config naming a codec Pinot knows that Sprig does not apply."""
    out = []
    for i, fc in enumerate(config.field_config_list):
        codec = field_codec(fc)
        if codec is not None and codec in PINOT_CODECS and codec not in APPLIED:
            out.append({
                "field": f"fieldConfigList[{i}].compressionCodec",
                "message": f"the {codec} codec is not implemented: column {fc.name!r} is "
                f"stored with {ZSTANDARD} (applied codecs: {', '.join(APPLIED)})",
            })  # fmt: skip
    return out
