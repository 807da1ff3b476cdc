"""A table's name and its type suffix, as Pinot's ``TableNameBuilder`` reads them; the one
home of the rule for the engine, the controller, the minions and the Spark jobs.

``airlineStats_OFFLINE`` is the OFFLINE table of the raw table ``airlineStats``. The suffix is
matched case-sensitively (``_offline`` is part of a raw name) and stripped once, OFFLINE
checked first: ``t_OFFLINE_REALTIME`` is the REALTIME table of raw ``t_OFFLINE``. A bare
``_OFFLINE`` is the OFFLINE table with an empty raw name, which no table config may have
(``TableConfig`` refuses it), so it names no table rather than a raw table ``_OFFLINE``.
"""

from __future__ import annotations

from engine.common.errors import ConfigError

OFFLINE = "OFFLINE"
REALTIME = "REALTIME"
TABLE_TYPES = (OFFLINE, REALTIME)

_SUFFIXES = tuple((f"_{table_type}", table_type) for table_type in TABLE_TYPES)


def split_table_name(name: str) -> tuple[str, str | None]:
    """``t_OFFLINE`` -> (``t``, ``OFFLINE``); a name without a type suffix -> (name, None)."""
    for suffix, table_type in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], table_type
    return name, None


def table_name_with_type(raw_name: str, table_type: str) -> str:
    """``airlineStats`` + ``OFFLINE`` (any case) -> ``airlineStats_OFFLINE``, Pinot's resource
    name. ``raw_name`` is a raw name, as ``split_table_name`` returns it, so the two are each
    other's inverse."""
    return f"{raw_name}_{table_type.upper()}"


def raw_name_for_type(name: str, table_type: str) -> str:
    """The raw name of the ``table_type`` table called ``name``, as Pinot's TableConfig reads
    a config's tableName: that type's own suffix is stripped (``t`` and ``t_OFFLINE`` are both
    the OFFLINE table ``t``); another type's suffix stays part of the raw name (``t_REALTIME``
    as an OFFLINE table is the raw table ``t_REALTIME``). ConfigError for an empty raw name."""
    raw, suffix_type = split_table_name(name)
    if suffix_type != table_type.upper():
        raw = name
    if not raw.strip():
        raise ConfigError(
            "tableName", f"{name!r} names no table: nothing comes before its _{table_type} suffix"
        )
    return raw
