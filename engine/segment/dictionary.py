"""Sorted per-column dictionaries: build (values -> sorted unique values + ids) and read."""

from __future__ import annotations

import bisect
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.types import DataType, smallest_uint_dtype


def encode(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Sorted unique values of ``values`` and each value's id in them (smallest uint width).
    ``values`` must have no nulls."""
    encoded = (
        pc.dictionary_encode(values).combine_chunks()
        if isinstance(values, pa.ChunkedArray)
        else pc.dictionary_encode(values)
    )
    unsorted = encoded.dictionary
    order = pc.sort_indices(unsorted).to_numpy()
    rank = np.empty(len(order), dtype=smallest_uint_dtype(max(len(order) - 1, 0)))
    rank[order] = np.arange(len(order), dtype=rank.dtype)
    ids = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    return unsorted.take(pa.array(order)), ids


class Dictionary:
    """A column's sorted distinct values. ``values`` is a read-only numpy array for fixed-width
    types (memory-mapped) and an Arrow array for STRING/JSON/BYTES/BIG_DECIMAL."""

    def __init__(self, data_type: DataType, values: np.ndarray | pa.Array):
        self.data_type = data_type
        self.values = values
        self._numeric = isinstance(values, np.ndarray)
        # lookups go through a plain ndarray view of the memory map: every np.memmap result
        # (a searchsorted, an item) runs memmap's Python-level __array_finalize__, which cost
        # more than the binary search itself
        self._plain = values.view(np.ndarray) if self._numeric else None

    def __len__(self) -> int:
        return len(self.values)

    def get(self, dict_id: int) -> object:
        """The value of ``dict_id`` in stored form (Python scalar)."""
        if self._numeric:
            return self._plain[dict_id].item()
        return self.values[dict_id].as_py()

    def take(self, dict_ids: np.ndarray) -> np.ndarray:
        """Decode ids to values as a numpy array (object dtype for variable-width types)."""
        if self._numeric:
            return self._plain[dict_ids]
        return self.values.take(pa.array(np.asarray(dict_ids, dtype=np.int64))).to_numpy(
            zero_copy_only=False
        )

    def to_numpy(self) -> np.ndarray:
        if self._numeric:
            return self.values
        return self.values.to_numpy(zero_copy_only=False)

    def _coerce(self, value: object) -> object:
        if self.data_type in (DataType.STRING, DataType.JSON):
            return value if isinstance(value, str) else str(value)
        if self.data_type is DataType.BYTES:
            return value if isinstance(value, bytes) else bytes.fromhex(str(value))
        if self.data_type is DataType.BIG_DECIMAL:
            return decimal.Decimal(str(value))
        if self.data_type is DataType.FLOAT and not isinstance(value, str):
            return np.float32(value)  # compare as the stored 32-bit float, as Pinot does
        if isinstance(value, str):
            return (
                self.data_type.to_stored(value)
                if self.data_type is not DataType.DOUBLE
                else float(value)
            )
        return value

    def _count_less(self, value: object, inclusive: bool) -> int:
        """Number of dictionary values < value (or <= when ``inclusive``), by binary search."""
        if self._numeric:
            return int(self._plain.searchsorted(value, side="right" if inclusive else "left"))
        # Arrow sorts strings and bytes by their bytes, which for UTF-8 is code point order,
        # the order Python compares them in, so bisect over the Arrow array agrees with it.
        search = bisect.bisect_right if inclusive else bisect.bisect_left
        return search(_ArrowValues(self.values), value)

    def index_of(self, value: object) -> int:
        """The id of ``value``, or -1 if it is not in the dictionary."""
        if value is None:
            return -1
        try:
            value = self._coerce(value)
        except (ValueError, TypeError, ArithmeticError):
            return -1
        pos = self._count_less(value, inclusive=False)
        if pos < len(self) and self.get(pos) == value:
            return pos
        return -1

    def id_range(
        self,
        lo: object | None,
        hi: object | None,
        lo_inclusive: bool = True,
        hi_inclusive: bool = True,
    ) -> tuple[int, int]:
        """Ids of values in the range as a half-open ``(start, end)``; ``None`` bounds are
        unbounded. An empty range has ``start >= end``."""
        start = 0 if lo is None else self._count_less(self._coerce(lo), inclusive=not lo_inclusive)
        end = (
            len(self) if hi is None else self._count_less(self._coerce(hi), inclusive=hi_inclusive)
        )
        return start, max(start, end)


class _ArrowValues:
    """A sequence view of an Arrow array for ``bisect`` (one scalar conversion per probe)."""

    def __init__(self, values: pa.Array):
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, i: int) -> object:
        return self._values[i].as_py()
