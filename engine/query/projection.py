"""Reading the selected docs' values for expressions, aggregation inputs and group keys.

A one-column expression over a dictionary-encoded column is computed on the dictionary
(cardinality values) and then gathered by dictionary id, so ``DATETRUNC('DAY', ts)`` or
``UPPER(city)`` costs one pass over distinct values plus a gather, not a Python loop.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from engine.query.aggregation import AggregationFunction, ValueBlock
from engine.query.errors import QueryValidationError
from engine.query.evaluate import evaluate
from engine.query.expressions import Expression, Identifier, columns_of
from engine.query.grouping import (
    TimeBuckets,
    combine_codes,
    decode_key,
    encode_values,
    run_starts,
    time_buckets,
)
from engine.query.segment_view import SegmentView


def doc_array(doc_ids: np.ndarray | slice | None, n: int) -> np.ndarray:
    """Doc ids as an int64 array: ``None`` means all ``n`` docs, a slice a doc range."""
    if doc_ids is None:
        return np.arange(n, dtype=np.int64)
    if isinstance(doc_ids, slice):
        return np.arange(doc_ids.start, doc_ids.stop, dtype=np.int64)
    return doc_ids


class Projection:
    """Values of the docs ``doc_ids`` of one segment: sorted int64 ids, a ``slice`` for a doc
    range (a sorted-index match: read as views, no gather), or None for every doc."""

    def __init__(self, view: SegmentView, doc_ids: np.ndarray | slice | None):
        self.view = view
        self.doc_ids = doc_ids
        if doc_ids is None:
            self.n = view.n
        elif isinstance(doc_ids, slice):
            self.n = doc_ids.stop - doc_ids.start
        else:
            self.n = len(doc_ids)
        self.columns_read: set[str] = set()
        # (codes, distinct) of expressions decided by the caller (a multi-value GROUP BY key)
        self.overrides: dict[Expression, tuple[np.ndarray, np.ndarray]] = {}
        # first row of each run of one group, when group_by found the groups in runs
        self.runs: np.ndarray | None = None

    def _ids(self, column: str) -> np.ndarray:
        ids = self.view.dict_ids(column)
        return ids if self.doc_ids is None else ids[self.doc_ids]

    def single_column_dict(self, expr: Expression) -> str | None:
        cols = columns_of(expr)
        if len(cols) != 1:
            return None
        (column,) = cols
        return column if self.view.is_dict_sv(column) else None

    def values(self, expr: Expression) -> np.ndarray:
        """The value of ``expr`` for each selected doc (SV columns only)."""
        column = self.single_column_dict(expr)
        if column is not None:
            self.columns_read.add(column)
            dictionary = self.view.dictionary(column)
            if isinstance(expr, Identifier):
                return dictionary[self._ids(column)]
            transformed = evaluate(expr, {Identifier(column): dictionary}.get, len(dictionary))
            return transformed[self._ids(column)]
        known = {}
        for name in columns_of(expr):
            if not self.view.meta(name).single_value:
                raise QueryValidationError(
                    f"Multi-value column '{name}' is only supported in SELECT, filters and *MV aggregations"
                )
            self.columns_read.add(name)
            known[Identifier(name)] = self.view.sv_values(name, self.doc_ids)
        return evaluate(expr, known.get, self.n)

    def codes(self, expr: Expression) -> tuple[np.ndarray, np.ndarray]:
        """(code per selected doc, distinct values) for grouping on ``expr``."""
        if expr in self.overrides:
            return self.overrides[expr]
        column = self.single_column_dict(expr)
        if column is not None:
            self.columns_read.add(column)
            dictionary = self.view.dictionary(column)
            ids = self._ids(column)
            if isinstance(expr, Identifier):
                return ids, dictionary
            transformed = evaluate(expr, {Identifier(column): dictionary}.get, len(dictionary))
            id_codes, distinct = encode_values(np.asarray(transformed))
            return id_codes[ids], distinct
        buckets = time_buckets(expr)
        if buckets is not None and self.n:
            coded = self._bucket_codes(buckets)
            if coded is not None:
                return coded
        return encode_values(np.asarray(self.values(expr)))

    def _bucket_codes(self, buckets: TimeBuckets) -> tuple[np.ndarray, np.ndarray] | None:
        """Codes of a DATETRUNC to fixed-length buckets of a raw integer column, computed
        straight from the column: ``(value - first bucket start) // step``, two passes into
        one array, instead of truncating every value and then encoding the results."""
        column = buckets.column
        if not self.view.meta(column).single_value:
            return None
        values = self.view.sv_values(column, self.doc_ids)
        if values.dtype.kind not in "iu":
            return None
        self.columns_read.add(column)
        codes, starts = buckets.codes(values)
        return None if codes is None else (codes, starts)

    def group_by(self, exprs: list[Expression]) -> tuple[np.ndarray, list[np.ndarray]]:
        """(group id per selected doc, key values per group for each expression)."""
        encoded = [self.codes(e) for e in exprs]
        cards = [len(d) for _, d in encoded]
        # a whole segment uses every entry of a column's dictionary
        whole_dictionary = (
            self.doc_ids is None
            and len(exprs) == 1
            and isinstance(exprs[0], Identifier)
            and exprs[0] not in self.overrides
            and self.single_column_dict(exprs[0]) is not None
        )
        # rows in runs of one key (time buckets of time-ordered rows): see run_starts
        self.runs = run_starts(encoded[0][0]) if len(exprs) == 1 else None
        inverse, group_keys = combine_codes(
            [c for c, _ in encoded], cards, whole_dictionary, self.runs
        )
        per_column = decode_key(group_keys, cards)
        return inverse, [d[c] for (_, d), c in zip(encoded, per_column, strict=True)]

    def block(
        self, fn: AggregationFunction, groups: np.ndarray | None
    ) -> tuple[ValueBlock, np.ndarray | None]:
        """The input of ``fn`` and the matching group index (expanded for MV inputs)."""
        if fn.argument is None:
            return ValueBlock(self.n), groups
        time_argument = getattr(fn, "time_argument", None)
        if time_argument is not None:
            return ValueBlock(
                self.n,
                raw=np.asarray(self.values(fn.argument)),
                times=np.asarray(self.values(time_argument)),
            ), groups
        if fn.multi_value:
            return self._mv_block(fn.argument, groups)
        argument = fn.argument
        if isinstance(argument, Identifier) and self.view.meta(argument.name).single_value:
            column = argument.name
            self.columns_read.add(column)
            if self.view.is_dict_sv(column):
                return ValueBlock(
                    self.n,
                    dict_ids=self._ids(column),
                    dictionary=self.view.dictionary(column),
                    whole_segment=self.doc_ids is None,
                ), groups
            return ValueBlock(self.n, raw=self.view.sv_values(column, self.doc_ids)), groups
        return ValueBlock(self.n, raw=np.asarray(self.values(argument))), groups

    def _mv_block(self, expr: Expression, groups: np.ndarray | None):
        if not isinstance(expr, Identifier):
            raise QueryValidationError(f"MV aggregations take a multi-value column, got {expr}")
        self.columns_read.add(expr.name)
        offsets, flat_ids, dictionary = self.view.mv(expr.name)
        if self.doc_ids is None:
            starts, ends = offsets[:-1], offsets[1:]
        else:
            docs = doc_array(self.doc_ids, self.view.n)
            starts, ends = offsets[docs], offsets[docs + 1]
        sizes = ends - starts
        positions = value_positions(starts, sizes)
        expanded = np.repeat(groups, sizes) if groups is not None else None
        if flat_ids is not None:
            return ValueBlock(
                len(positions), dict_ids=flat_ids[positions], dictionary=dictionary
            ), expanded
        return ValueBlock(len(positions), raw=dictionary[positions]), expanded

    def selection_column(self, expr: Expression) -> pa.Array:
        """Values for SELECT output; MV columns become list arrays."""
        if isinstance(expr, Identifier) and not self.view.meta(expr.name).single_value:
            self.columns_read.add(expr.name)
            offsets, flat_ids, dictionary = self.view.mv(expr.name)
            docs = doc_array(self.doc_ids, self.view.n)
            starts, sizes = offsets[docs], offsets[docs + 1] - offsets[docs]
            positions = value_positions(starts, sizes)
            flat = (
                dictionary[flat_ids[positions]] if flat_ids is not None else dictionary[positions]
            )
            new_offsets = np.zeros(len(docs) + 1, dtype=np.int32)
            np.cumsum(sizes, out=new_offsets[1:])
            return pa.ListArray.from_arrays(pa.array(new_offsets), pa.array(flat))
        return pa.array(self.values(expr))


def value_positions(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + size)`` for each pair, vectorised."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shifts = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return shifts + np.arange(total)
