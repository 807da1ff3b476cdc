"""Pinot's segment partition functions (``segmentPartitionConfig.columnPartitionMap``): the one
home of the rule that maps a column value to its partition. The segment writer records the
partitions a segment's values fall in; the server's and the broker's pruners compute the
partitions a filter's values fall in; the real-time consumer partitions rows. All of them call
this module, so they cannot disagree.

Pinot hands every function the value's *text* (``Integer.toString``, ``Double.toString``,
``BigDecimal.toPlainString``, lower-case hex for BYTES; see ``value_text``). With
n = numPartitions:

- ``Murmur`` (alias ``Murmur2``): Kafka's murmur2 of the UTF-8 bytes, ``(h & 0x7fffffff) % n``.
- ``Murmur3``: 32-bit murmur3 of the UTF-8 bytes with ``functionConfig.seed`` (a Java int,
  default 0). ``functionConfig.variant`` is ``x86_32`` (default; Guava's
  ``murmur3_32_fixed``) or ``x64_32`` (the upper 32 bits of Infinispan's 64-bit x64 hash).
  Then ``(h & 0x7fffffff) % n``.
- ``Modulo``: the text parsed as a Java long, ``v % n``, made non-negative.
- ``HashCode``: ``abs(String.hashCode()) % n``, where abs is Kafka's (MIN_VALUE gives 0).
- ``ByteArray``: ``abs(Arrays.hashCode(UTF-8 bytes)) % n``, with the same abs.
- ``BoundedColumnValue``: 1 + the index of the first of ``functionConfig.columnValues``
  that equals the value, ignoring case, else 0. The values are split at any character of
  ``columnValuesDelimiter``. numPartitions must be the number of values + 1.

Function names match case-insensitively, as Pinot's ``PartitionFunctionFactory`` does.
"""

from __future__ import annotations

import abc
import decimal
import functools
import re
from collections.abc import Iterable, Mapping

import numpy as np

from engine.common.errors import ConfigError
from engine.common.types import DataType
from engine.spi.partition_hashes import (
    INTEGRAL_TYPES,
    java_bytes_hash,
    java_string_hash,
    kafka_abs,
    murmur2,
    murmur3_x64_32,
    murmur3_x86_32,
    plain_decimal,
    utf8,
    value_text,
)

_INT_MAX = 0x7FFFFFFF
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+\Z")  # what Integer/Long.parseLong accept (ASCII)


def literal_text(literal: object, data_type: DataType | None) -> str | None:
    """The text of the stored value that a filter literal (``col = literal``) selects, with
    string literals converted by ``DataType.to_stored`` as the query engine's filter does.
    None when that cannot be known (unknown type, a literal that equals no stored value or
    that the engine compares in a way the text does not capture): the caller must not prune."""
    if data_type is None or literal is None:
        return None
    try:
        value = data_type.to_stored(literal) if isinstance(literal, str) else literal
        if data_type in INTEGRAL_TYPES:
            if isinstance(value, bool | int | np.integer):
                return str(int(value))
            if isinstance(value, float | decimal.Decimal) and value == int(value):
                return str(int(value))
            return None
        if data_type in (DataType.DOUBLE, DataType.FLOAT):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                return None
            return value_text(value, data_type)
        if data_type is DataType.BIG_DECIMAL:
            exact = decimal.Decimal(str(value))
            if exact.as_tuple().exponent < -18:  # more digits than the column stores
                return None
            return plain_decimal(exact)
        if data_type is DataType.BYTES:
            return bytes(value).hex() if isinstance(value, bytes | bytearray) else None
        return value if isinstance(value, str) else None
    except (ValueError, TypeError, ArithmeticError, OverflowError):
        return None


# ---- the functions ---------------------------------------------------------------------------
class PartitionFunction(abc.ABC):
    """One configured partition function. ``partition(text)`` maps a value's text (see
    ``value_text``) to a partition id in ``[0, num_partitions)``; it raises ValueError for a
    text the function cannot take (Modulo of a non-integer)."""

    name = ""

    def __init__(self, num_partitions: int, function_config: Mapping[str, str]):
        self.num_partitions = num_partitions
        self.function_config = dict(function_config)

    @abc.abstractmethod
    def partition(self, text: str) -> int: ...

    def partitions_of_values(self, values: Iterable, data_type: DataType) -> list[int]:
        """Sorted distinct partitions of stored ``values`` of a ``data_type`` column."""
        return sorted({self.partition(value_text(v, data_type)) for v in values})

    def partition_of_literal(self, literal: object, data_type: DataType | None) -> int | None:
        """The partition of the stored value a filter literal selects, or None when unknown
        (then the caller keeps the segment)."""
        text = literal_text(literal, data_type)
        if text is None:
            return None
        try:
            return self.partition(text)
        except ValueError:
            return None

    def to_json(self) -> dict:
        """Pinot's ``ColumnPartitionMetadata`` fields, without the partitions."""
        return {
            "functionName": self.name,
            "numPartitions": self.num_partitions,
            "functionConfig": dict(self.function_config),  # {} (not null): see recorded_function
        }

    def _key(self) -> tuple:
        return (self.name, self.num_partitions, tuple(sorted(self.function_config.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionFunction) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{self.name}({self.num_partitions}, {self.function_config})"


class Murmur(PartitionFunction):
    name = "Murmur"

    def partition(self, text: str) -> int:
        return (murmur2(utf8(text)) & _INT_MAX) % self.num_partitions


class Murmur3(PartitionFunction):
    name = "Murmur3"

    def __init__(self, num_partitions: int, function_config: Mapping[str, str], path: str = ""):
        super().__init__(num_partitions, function_config)
        seed = function_config.get("seed") or "0"  # Pinot: absent or empty means 0
        if not _JAVA_INTEGER.match(seed) or not -(2**31) <= int(seed) <= _INT_MAX:
            raise ConfigError(
                f"{path}functionConfig.seed", f"must be a 32-bit integer, got {seed!r}"
            )
        variant = function_config.get("variant") or "x86_32"
        if variant not in ("x86_32", "x64_32"):
            raise ConfigError(
                f"{path}functionConfig.variant", f"must be x86_32 or x64_32, got {variant!r}"
            )
        self.seed = int(seed)
        self._hash = murmur3_x86_32 if variant == "x86_32" else murmur3_x64_32

    def partition(self, text: str) -> int:
        return (self._hash(utf8(text), self.seed) & _INT_MAX) % self.num_partitions


class Modulo(PartitionFunction):
    name = "Modulo"

    def partition(self, text: str) -> int:
        if not _JAVA_INTEGER.match(text) or not -(2**63) <= int(text) < 2**63:
            raise ValueError(f"Modulo partitioning needs integer values, got {text!r}")
        return int(text) % self.num_partitions  # Python's % is already non-negative

    def partition_of_literal(self, literal: object, data_type: DataType | None) -> int | None:
        # Only the integer matters, whatever the column's type (a value Modulo can take is
        # an integer's text), so an integral literal maps to a partition even untyped.
        if data_type is None and isinstance(literal, int | float) and not isinstance(literal, bool):
            literal = str(int(literal)) if float(literal).is_integer() else None
            return None if literal is None else self.partition(literal)
        return super().partition_of_literal(literal, data_type)


class HashCode(PartitionFunction):
    name = "HashCode"

    def partition(self, text: str) -> int:
        return kafka_abs(java_string_hash(text)) % self.num_partitions


class ByteArray(PartitionFunction):
    name = "ByteArray"

    def partition(self, text: str) -> int:
        return kafka_abs(java_bytes_hash(utf8(text))) % self.num_partitions


class BoundedColumnValue(PartitionFunction):
    name = "BoundedColumnValue"

    def __init__(self, num_partitions: int, function_config: Mapping[str, str], path: str = ""):
        super().__init__(num_partitions, function_config)
        where = f"{path}functionConfig"
        if not function_config:
            raise ConfigError(
                where, "BoundedColumnValue needs columnValues and columnValuesDelimiter"
            )
        for key in ("columnValues", "columnValuesDelimiter"):
            if function_config.get(key) is None:
                raise ConfigError(f"{where}.{key}", f"{key} must be configured")
        self.values = _split_any(
            function_config["columnValues"], function_config["columnValuesDelimiter"]
        )
        if num_partitions != len(self.values) + 1:
            raise ConfigError(
                f"{path}numPartitions",
                f"must be one more than the {len(self.values)} column values, got {num_partitions}",
            )
        self._folded = [_fold(v) for v in self.values]

    def partition(self, text: str) -> int:
        folded = _fold(text)
        return next((i + 1 for i, v in enumerate(self._folded) if v == folded), 0)


def _split_any(text: str, delimiters: str) -> list[str]:
    """commons-lang ``StringUtils.split(text, chars)``: split at any of the characters, no
    empty tokens."""
    if not delimiters:
        return [text] if text else []
    return [t for t in re.split(f"[{re.escape(delimiters)}]", text) if t]


def _fold(text: str) -> str:
    """A key under which two strings are equal exactly when Java's ``equalsIgnoreCase``
    says so: per UTF-16 unit, upper-cased then lower-cased with single-character mappings."""
    out = []
    for ch in text:
        up = ch.upper()
        up = up if len(up) == 1 else ch  # Java keeps a char whose upper case is longer (ß)
        out.append(up.lower()[0])  # the first char is Java's simple lower case (İ -> i)
    return "".join(out)


_FUNCTIONS: dict[str, type[PartitionFunction]] = {
    cls.name.lower(): cls
    for cls in (Modulo, Murmur, Murmur3, HashCode, ByteArray, BoundedColumnValue)
}
_FUNCTIONS["murmur2"] = Murmur  # Pinot registers MurmurPartitionFunction under both names
FUNCTION_NAMES = tuple(cls.name for cls in dict.fromkeys(_FUNCTIONS.values()))


def canonical_name(name: object) -> str | None:
    """Pinot's spelling of a partition function name (matched case-insensitively), or None."""
    cls = _FUNCTIONS.get(str(name).lower())
    return cls.name if cls else None


def partition_function(
    name: str, num_partitions: int, function_config: Mapping | None = None, *, path: str = ""
) -> PartitionFunction:
    """The partition function ``name`` (case-insensitive) over ``num_partitions`` partitions.
    Raises ConfigError naming the bad key, prefixed with ``path`` (e.g. "...columnPartitionMap.k.")."""
    if name is None or name == "":
        raise ConfigError(f"{path}functionName", "functionName is required")
    cls = _FUNCTIONS.get(str(name).lower())
    if cls is None:
        raise ConfigError(
            f"{path}functionName",
            f"unknown partition function {name!r}; expected one of {', '.join(FUNCTION_NAMES)}",
        )
    if (
        isinstance(num_partitions, bool)
        or not isinstance(num_partitions, int)
        or num_partitions < 1
    ):
        raise ConfigError(
            f"{path}numPartitions", f"must be a positive integer, got {num_partitions!r}"
        )
    config = _string_map(function_config, f"{path}functionConfig")
    return _build(cls, num_partitions, tuple(sorted(config.items())), path)


@functools.lru_cache(maxsize=512)
def _build(
    cls: type[PartitionFunction], num_partitions: int, items: tuple, path: str
) -> PartitionFunction:
    if cls in (Murmur3, BoundedColumnValue):
        return cls(num_partitions, dict(items), path)
    return cls(num_partitions, dict(items))


def _string_map(config: Mapping | None, path: str) -> dict[str, str]:
    """functionConfig is Pinot's Map<String, String>: JSON numbers and booleans become their
    text, as Jackson makes them."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(path, f"expected a JSON object, got {type(config).__name__}")
    out = {}
    for key, value in config.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int):
            value = str(value)
        elif not isinstance(value, str):
            raise ConfigError(f"{path}.{key}", f"expected a string, got {type(value).__name__}")
        out[str(key)] = value
    return out


def recorded_function(
    name: object, num_partitions: object, function_config: Mapping | None
) -> PartitionFunction | None:
    """The function a segment's partition metadata records, for pruning; None when it cannot
    be rebuilt (then nothing may be pruned by it). Murmur3 metadata without a functionConfig
    entry comes from writers that did not record the seed (older Sprig builds assumed 9001),
    so its partitions cannot be trusted."""
    if str(name).lower() == "murmur3" and function_config is None:
        return None
    try:
        return partition_function(str(name), int(num_partitions), function_config or {})
    except (ConfigError, TypeError, ValueError):
        return None
