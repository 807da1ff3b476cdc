"""The aggregation function contract and the shared grouped-histogram kernel.

Every aggregation works on whole arrays: ``aggregate`` turns the values of the matching rows
plus a group index per row (``groups``: int64 in ``[0, n_groups)``, or None when there is no
GROUP BY) into a *state* with one entry per group; ``merge`` folds a concatenation of states
(from many segments or servers) into ``n_groups`` states through a group index per entry;
``finalize`` turns states into result values. States are tuples of numpy arrays and
round-trip through Arrow (``to_arrow`` / ``from_arrow``) so servers can ship them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from engine.query.expressions import Function


@dataclass
class ValueBlock:
    """The input values of one aggregation for the selected rows.

    For dictionary-encoded columns ``dict_ids`` indexes ``dictionary`` (sorted distinct
    values), which lets kernels work on small integer ids instead of values.
    """

    n_rows: int
    dict_ids: np.ndarray | None = None
    dictionary: np.ndarray | None = None
    raw: np.ndarray | None = None
    times: np.ndarray | None = None  # the second input of FIRSTWITHTIME / LASTWITHTIME
    # The rows are every doc of a segment: a segment's dictionary holds only values that
    # occur, so each of its entries is used by some row (the distinct values need no scan).
    whole_segment: bool = False
    # Every group in [0, n_groups) has a row here (none was dropped after grouping).
    every_group: bool = False

    def values(self) -> np.ndarray:
        if self.raw is None:
            self.raw = self.dictionary[self.dict_ids] if self.dict_ids is not None else np.empty(0)
        return self.raw

    def codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(code per row, sorted distinct values) with ``values == distinct[codes]``."""
        if self.dict_ids is not None:
            return self.dict_ids, self.dictionary
        from engine.query.grouping import encode_values

        return encode_values(np.asarray(self.values()))


class AggregationFunction:
    """Base class; subclasses set ``name``, ``result_type`` and the state kernels."""

    name = ""
    result_type = "DOUBLE"
    needs_values = True
    state_fields: tuple[str, ...] = ("value",)
    # with enableNullHandling: the expression whose NULL rows the function skips (see
    # engine.query.aggregation.nullable); None reads every row
    null_input = None

    def __init__(self, call: Function, argument, params: tuple = ()):
        self.call = call
        self.argument = argument  # the input expression (None for COUNT(*))
        self.params = params
        self.multi_value = False
        self.filter = None  # the condition of AGG(...) FILTER (WHERE condition), if any
        self.counted = argument  # what COUNT was given (its ``argument`` is dropped)

    @property
    def plain(self) -> AggregationFunction:
        """This function without null handling (itself, unless made null-aware)."""
        return self.__dict__.get("_plain", self)

    @property
    def column_name(self) -> str:
        return str(self.call)

    # --- kernels ----------------------------------------------------------------------------
    def aggregate(self, block: ValueBlock, groups: np.ndarray | None, n_groups: int) -> tuple:
        raise NotImplementedError

    def merge(self, state: tuple, groups: np.ndarray, n_groups: int) -> tuple:
        raise NotImplementedError

    def merge_one(self, states: list[tuple]) -> tuple:
        """The single-group state of several single-group states (a query without GROUP BY,
        combined over segments and servers): ``merge`` of their concatenation."""
        return self.merge(self.concat_states(states), np.zeros(len(states), dtype=np.int64), 1)

    def finalize(self, state: tuple) -> np.ndarray:
        raise NotImplementedError

    def finalize_nulls(self, state: tuple) -> np.ndarray | None:
        """Which groups' results are NULL (None: none is)."""
        return None

    def empty_state(self, n_groups: int = 1) -> tuple:
        return self.aggregate(ValueBlock(0, raw=np.empty(0)), np.zeros(0, np.int64), n_groups)

    def of_parts(self, state: tuple, n_parts: int) -> tuple:
        """The state of ``n_parts`` non-empty parts (star-tree records, runs of rows) from
        the function's own kernels' state of them."""
        return state

    # --- transport --------------------------------------------------------------------------
    def to_arrow(self, state: tuple) -> list[pa.Array]:
        return [pa.array(part) for part in state]

    def from_arrow(self, columns: list[pa.Array]) -> tuple:
        return tuple(c.to_numpy(zero_copy_only=False) for c in columns)

    @classmethod
    def plain_state_codec(cls) -> bool:
        """Whether the state travels as its numpy arrays are (this base codec, not one of
        a function's own): then a numeric state can skip Arrow (``engine.query.intermediate``)."""
        return (
            cls.to_arrow is AggregationFunction.to_arrow
            and cls.from_arrow is AggregationFunction.from_arrow
        )

    def take(self, state: tuple, index: np.ndarray) -> tuple:
        return tuple(part[index] for part in state)

    def concat_states(self, states: list[tuple]) -> tuple:
        """One state holding the groups of ``states`` one after another."""
        return tuple(np.concatenate(parts) for parts in zip(*states, strict=True))


def group_index(groups: np.ndarray | None, n_rows: int) -> np.ndarray:
    return np.zeros(n_rows, dtype=np.int64) if groups is None else groups


# --- grouped histogram: (group, value) -> count, sorted by group then value ----------------


@dataclass
class Histogram:
    offsets: np.ndarray  # int64, n_groups + 1
    values: np.ndarray
    counts: np.ndarray  # float64 (weights can come from merged counts)

    def group_sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def histogram(groups: np.ndarray | None, codes: np.ndarray, distinct: np.ndarray, n_groups: int,
              weights: np.ndarray | None = None) -> Histogram:  # fmt: skip
    """Count each (group, value) pair. ``codes`` index ``distinct``; ``groups`` None means
    one group; ``weights`` (optional) add that much per row instead of 1."""
    card = max(len(distinct), 1)
    if groups is None:
        key = codes.astype(np.intp, copy=False)
    else:
        key = groups.astype(np.int64) * card + codes
    space = n_groups * card
    if space <= 4 * len(key) + 65_536:
        counts = np.bincount(key, weights=weights, minlength=space)
        present = np.flatnonzero(counts)
        counts = counts[present]
    else:
        present, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), weights=weights, minlength=len(present))
    entry_groups = present // card
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_groups, minlength=n_groups), out=offsets[1:])
    return Histogram(offsets, distinct[present % card], counts.astype(np.float64))


def histogram_from_block(block: ValueBlock, groups: np.ndarray | None, n_groups: int) -> Histogram:
    codes, distinct = block.codes()
    return histogram(groups, codes, distinct, n_groups)


def merge_histograms(hist: Histogram, groups: np.ndarray, n_groups: int) -> Histogram:
    """Fold entries of ``hist`` (one list per old group) into ``n_groups`` new groups."""
    entry_groups = np.repeat(groups, hist.group_sizes())
    if len(hist.values) == 0:
        return Histogram(np.zeros(n_groups + 1, np.int64), hist.values, hist.counts)
    distinct, codes = np.unique(hist.values, return_inverse=True)
    return histogram(entry_groups, codes.reshape(-1), distinct, n_groups, weights=hist.counts)


def histogram_to_arrow(hist: Histogram) -> list[pa.Array]:
    offsets = pa.array(hist.offsets, type=pa.int64())
    values = pa.array(hist.values)
    return [
        pa.LargeListArray.from_arrays(offsets, values),
        pa.LargeListArray.from_arrays(offsets, pa.array(hist.counts, type=pa.float64())),
    ]


def histogram_from_arrow(columns: list[pa.Array]) -> Histogram:
    values_list, counts_list = columns
    if isinstance(values_list, pa.ChunkedArray):
        values_list = values_list.combine_chunks()
        counts_list = counts_list.combine_chunks()
    offsets = values_list.offsets.to_numpy().astype(np.int64)
    base = offsets[0]
    flat = values_list.values.slice(base, offsets[-1] - base).to_numpy(zero_copy_only=False)
    counts = counts_list.values.slice(base, offsets[-1] - base).to_numpy(zero_copy_only=False)
    return Histogram(offsets - base, flat, counts.astype(np.float64))


def take_histogram(hist: Histogram, index: np.ndarray) -> Histogram:
    sizes = hist.group_sizes()[index]
    starts = hist.offsets[:-1][index]
    positions = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(
        sizes.sum()
    )
    offsets = np.zeros(len(index) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return Histogram(offsets, hist.values[positions], hist.counts[positions])


def concat_histograms(hists: list[Histogram]) -> Histogram:
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for h in hists:
        offsets.append(h.offsets[1:] + base)
        base += h.offsets[-1]
    values = [h.values for h in hists if len(h.values)]
    return Histogram(
        np.concatenate(offsets),
        np.concatenate(values) if values else np.empty(0),
        np.concatenate([h.counts for h in hists]) if hists else np.empty(0),
    )
