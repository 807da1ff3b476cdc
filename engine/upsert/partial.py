"""Partial upsert: a new row merged with the key's previous row, column by column, as Pinot's
``PartialUpsertColumnarMerger`` does (one merger per strategy).

``p`` is the previous value, ``n`` the new one, ``None`` a null (the column's null vector):
FORCE_OVERWRITE takes ``n`` even null; OVERWRITE ``n`` unless null; the others take the side
that is not null, and with both present: IGNORE ``p``, INCREMENT ``p + n`` (INT and LONG wrap
as Java's do), APPEND ``p`` then ``n`` (duplicates kept), UNION the sorted distinct values of
both, MAX and MIN (a tie takes ``n``). A null result is stored as the column's default null
value, marked null. Primary-key and comparison columns are never merged; a null comparison
column (one of several) takes ``p``.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.common.types import DataType
from engine.spi.upsert_config import Strategy, UpsertConfig

_WRAP = {DataType.INT: 32, DataType.LONG: 64}


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _increment(data_type: DataType) -> Callable:
    bits = _WRAP.get(data_type)
    if bits is None:
        return lambda p, n: p + n
    return lambda p, n: _wrap(int(p) + int(n), bits)


def _union(p, n):
    return sorted(set(p) | set(n))


def _max(p, n):
    return n if n >= p else p


def _min(p, n):
    return n if n <= p else p


def _both(data_type: DataType, strategy: Strategy) -> Callable:
    return {
        Strategy.IGNORE: lambda p, n: p,
        Strategy.INCREMENT: _increment(data_type),
        Strategy.APPEND: lambda p, n: list(p) + list(n),
        Strategy.UNION: _union,
        Strategy.MAX: _max,
        Strategy.MIN: _min,
    }[strategy]


class PartialMerger:
    """Merges rows given as (values: column -> value, nulls: set of null columns)."""

    def __init__(self, config: UpsertConfig, schema, key_columns: list[str],
                 comparison_columns: list[str]):  # fmt: skip
        self.schema = schema
        self.comparison = list(comparison_columns)
        skip = set(key_columns) | set(comparison_columns)
        self.columns = [f.name for f in schema.fields if f.name not in skip]
        self.strategies = {c: config.strategy_of(c) for c in self.columns}
        self._both = {
            c: _both(schema.field(c).data_type, s)
            for c, s in self.strategies.items()
            if s not in (Strategy.OVERWRITE, Strategy.FORCE_OVERWRITE)
        }

    def merge(self, previous: tuple[dict, set], new: tuple[dict, set]) -> tuple[dict, set]:
        p_values, p_nulls = previous
        n_values, n_nulls = new
        values, nulls = dict(n_values), set(n_nulls)
        for column in self.columns:
            p = None if column in p_nulls else p_values[column]
            n = None if column in n_nulls else n_values[column]
            strategy = self.strategies[column]
            if strategy is Strategy.FORCE_OVERWRITE:
                merged = n
            elif strategy is Strategy.OVERWRITE:
                merged = p if n is None else n
            elif p is None or n is None:
                merged = n if p is None else p
            else:
                merged = self._both[column](p, n)
            self._put(values, nulls, column, merged)
        if len(self.comparison) > 1:
            for column in self.comparison:
                if column in n_nulls and column not in p_nulls:
                    self._put(values, nulls, column, p_values[column])
        return values, nulls

    def _put(self, values: dict, nulls: set, column: str, value) -> None:
        if value is None:
            spec = self.schema.field(column)
            default = spec.default_null_value
            values[column] = default if spec.single_value else [default]
            nulls.add(column)
        else:
            values[column] = value
            nulls.discard(column)
