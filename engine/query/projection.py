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
from engine.query.evaluate import (
    evaluate,
    evaluate_nullable,
    needs_nullable,
    propagates_nulls,
)
from engine.query.expressions import Expression, Function, Identifier, columns_of
from engine.query.grouping import (
    TimeBuckets,
    combine_codes,
    decode_key,
    encode_values,
    fill_nulls,
    run_starts,
    time_buckets,
    with_null_code,
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
        if needs_nullable(expr, self.view.null_handling):
            return self.nullable_values(expr)[0]
        column = self.single_column_dict(expr)
        if column is not None:
            self.columns_read.add(column)
            dictionary = self.view.dictionary(column)
            if isinstance(expr, Identifier):
                return dictionary[self._ids(column)]
            transformed = evaluate(expr, {Identifier(column): dictionary}.get, len(dictionary))
            return transformed[self._ids(column)]
        known = {Identifier(name): self._sv_values(name) for name in columns_of(expr)}
        return evaluate(expr, known.get, self.n)

    # ---- NULLs ------------------------------------------------------------------------------
    def null_mask(self, column: str) -> np.ndarray | None:
        """The selected docs whose ``column`` is NULL, as a bool per doc (None: none is)."""
        mask = self.view.null_mask(column)
        if mask is None or self.doc_ids is None:
            return mask
        selected = mask[self.doc_ids]
        return selected if selected.any() else None

    def nulls_of(self, expr: Expression) -> np.ndarray | None:
        """The selected docs where ``expr`` is NULL (None: none is)."""
        if not propagates_nulls(expr):
            return self.nullable_values(expr)[1]
        nulls = None
        for name in columns_of(expr):
            mask = self.null_mask(name)
            if mask is not None:
                self.columns_read.add(name)
                nulls = mask if nulls is None else nulls | mask
        return nulls

    def nullable_values(self, expr: Expression) -> tuple[np.ndarray, np.ndarray | None]:
        """(value per selected doc, NULL per selected doc or None); see ``evaluate_nullable``."""
        sql_nulls = self.view.null_handling
        column = self.single_column_dict(expr)
        if column is None:
            known, masks = {}, {}
            for name in columns_of(expr):
                if self.view.meta(name).single_value or not _only_null_tested(expr, name):
                    known[Identifier(name)] = self._sv_values(name)
                else:  # ``mv IS NULL``: the null value vector answers, no value is read
                    known[Identifier(name)] = np.zeros(self.n)
                masks[Identifier(name)] = self.null_mask(name)
            return evaluate_nullable(expr, known.get, masks.get, self.n, sql_nulls=sql_nulls)
        self.columns_read.add(column)
        dictionary = self.view.dictionary(column)
        column_nulls = self.null_mask(column)
        if isinstance(expr, Identifier):
            return dictionary[self._ids(column)], column_nulls
        key = Identifier(column)
        per_id, id_nulls = evaluate_nullable(
            expr, {key: dictionary}.get, _no_nulls, len(dictionary), sql_nulls=sql_nulls
        )
        ids = self._ids(column)
        values, nulls = per_id[ids], None if id_nulls is None else id_nulls[ids]
        if column_nulls is None or not len(dictionary):
            return values, nulls
        # every NULL doc of the column gives one answer: the expression's at a NULL input
        at_null, null_at_null = evaluate_nullable(
            expr, {key: dictionary[:1]}.get, {key: np.ones(1, dtype=bool)}.get, 1,
            sql_nulls=sql_nulls,
        )  # fmt: skip
        if null_at_null is None:
            values = np.where(column_nulls, at_null[0], values)
        nulls = np.zeros(self.n, dtype=bool) if nulls is None else nulls.copy()
        nulls[column_nulls] = null_at_null is not None
        return values, nulls if nulls.any() else None

    def _sv_values(self, name: str) -> np.ndarray:
        if not self.view.meta(name).single_value:
            raise QueryValidationError(
                f"Multi-value column '{name}' is only supported in SELECT, filters and *MV aggregations"
            )
        self.columns_read.add(name)
        return self.view.sv_values(name, self.doc_ids)

    def nullable_codes(self, expr: Expression) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``codes`` plus the NULL mark of each distinct value (None: no NULL key): the NULL
        rows share one code of their own, as Pinot's group key generators give NULL one
        group. A multi-value key has none: Pinot groups a NULL multi-value doc under its
        stored default."""
        if expr in self.overrides:
            return (*self.overrides[expr], None)
        if propagates_nulls(expr):
            nulls = self.nulls_of(expr)
            codes, distinct = self.codes(expr)
        else:
            values, nulls = self.nullable_values(expr)
            codes, distinct = encode_values(fill_nulls(np.asarray(values), nulls))
        return with_null_code(codes, distinct, nulls)

    def codes(self, expr: Expression) -> tuple[np.ndarray, np.ndarray]:
        """(code per selected doc, distinct values) for grouping on ``expr``."""
        if expr in self.overrides:
            return self.overrides[expr]
        if needs_nullable(expr, self.view.null_handling):
            values, nulls = self.nullable_values(expr)
            return encode_values(fill_nulls(np.asarray(values), nulls))
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

    def group_by(
        self, exprs: list[Expression]
    ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray | None]]:
        """(group id per selected doc, key values per group for each expression, and each
        key's NULL marks per group or None). Keys are NULL only with null handling."""
        if self.view.null_handling:
            triples = [self.nullable_codes(e) for e in exprs]
            encoded = [(c, d) for c, d, _ in triples]
            distinct_nulls = [n for _, _, n in triples]
        else:
            encoded = [self.codes(e) for e in exprs]
            distinct_nulls = [None] * len(exprs)
        cards = [len(d) for _, d in encoded]
        # a whole segment uses every entry of a column's dictionary
        whole_dictionary = (
            self.doc_ids is None
            and len(exprs) == 1
            and isinstance(exprs[0], Identifier)
            and exprs[0] not in self.overrides
            and self.single_column_dict(exprs[0]) is not None
            and distinct_nulls[0] is None
        )
        # rows in runs of one key (time buckets of time-ordered rows): see run_starts
        self.runs = run_starts(encoded[0][0]) if len(exprs) == 1 else None
        inverse, group_keys = combine_codes(
            [c for c, _ in encoded], cards, whole_dictionary, self.runs
        )
        per_column = decode_key(group_keys, cards)
        keys = [d[c] for (_, d), c in zip(encoded, per_column, strict=True)]
        key_nulls = [
            None if n is None else n[c] for n, c in zip(distinct_nulls, per_column, strict=True)
        ]
        return inverse, keys, key_nulls

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
        """Values for SELECT output; MV columns become list arrays. With null handling a
        NULL is an Arrow null."""
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
            nulls = self.null_mask(expr.name) if self.view.null_handling else None
            return pa.ListArray.from_arrays(
                pa.array(new_offsets),
                pa.array(flat),
                mask=None if nulls is None else pa.array(nulls),
            )
        if self.view.null_handling:
            values, nulls = self.nullable_values(expr)
            return pa.array(values, mask=nulls)
        return pa.array(self.values(expr))


def _no_nulls(expr: Expression) -> None:
    return None


def _only_null_tested(expr: Expression, column: str) -> bool:
    """Whether ``column`` appears in ``expr`` only as the operand of IS [NOT] NULL."""
    if isinstance(expr, Identifier):
        return expr.name != column
    if not isinstance(expr, Function):
        return True
    if expr.name in ("is_null", "is_not_null") and expr.args[0] == Identifier(column):
        return True
    return all(_only_null_tested(a, column) for a in expr.args)


def value_positions(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + size)`` for each pair, vectorised."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shifts = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return shifts + np.arange(total)
