"""The WHERE clause over one segment: pick the best access path per predicate and produce a
``DocSet``.

Access paths, best first: the sorted index (a doc range per dictionary id), the inverted
index (a bitmap per id), the range index (range predicates), then a vectorised scan of the
dictionary-id forward index through a per-dictionary lookup table, or of raw values.
Predicates are matched against the *dictionary* (small), never row by row. Inside an AND the
indexed children run first and scans then read only the surviving docs.

Multi-value columns follow Pinot: a doc matches an inclusive predicate (=, IN, <, LIKE ...)
when any of its values does, and an exclusive one (!=, NOT IN) when none of its values is
excluded.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from engine.common.cancel import checkpoint
from engine.query.docset import DocSet, complement, intersect, union
from engine.query.errors import QueryValidationError
from engine.query.evaluate import evaluate, evaluate_nullable, needs_nullable
from engine.query.expressions import Expression, Function, Identifier, Literal, columns_of
from engine.query.predicate import (
    EXCLUSIVE,
    NULL_OPS,
    RANGE_OPS,
    Leaf,
    match_ids,
    match_list,
    match_lut,
    memo_key,
    to_leaf,
    typed_literals,
)
from engine.query.segment_view import SegmentView
from engine.query.zone_map import RangeBounds, zone_scan

MAX_BITMAPS_TO_UNION = 20_000
_INDEX_PATHS = frozenset({"FILTER_SORTED_INDEX", "FILTER_INVERTED_INDEX"})


class FilterEvaluator:
    """Evaluates one filter tree on one segment and counts the entries it scanned."""

    def __init__(self, view: SegmentView, null_handling: bool = False):
        self.view = view
        self.n = view.n
        self.entries_scanned = 0
        # enableNullHandling: a predicate on a null value is unknown, so the row never matches
        # (nor does its NOT), as in Pinot; without it a null is its stored default value.
        self.null_handling = null_handling
        self._scanned_nulls: dict[int, DocSet] = {}  # NULL docs of nullable scans, by id

    # ---- access path choice (shared with EXPLAIN) -------------------------------------------
    def access_path(self, leaf: Leaf) -> str:
        view = self.view
        if leaf.column is None:
            return "FILTER_EXPRESSION_SCAN" if columns_of(leaf.lhs) else "FILTER_CONSTANT"
        meta = view.meta(leaf.column)
        plain = isinstance(leaf.lhs, Identifier)
        if leaf.op in NULL_OPS and plain:
            return "FILTER_NULL_VALUE_INDEX"
        if not meta.has_dictionary:
            if plain and meta.single_value and "range" in meta.indexes and leaf.op in RANGE_OPS:
                return "FILTER_RANGE_INDEX"
            return "FILTER_FULL_SCAN" if plain else "FILTER_EXPRESSION_SCAN"
        if meta.single_value and meta.is_sorted:
            return "FILTER_SORTED_INDEX"
        if "inverted" in meta.indexes:
            return "FILTER_INVERTED_INDEX"
        if (
            meta.single_value
            and "range" in meta.indexes
            and leaf.op in RANGE_OPS
            and isinstance(leaf.lhs, Identifier)
        ):
            return "FILTER_RANGE_INDEX"
        return "FILTER_FULL_SCAN" if isinstance(leaf.lhs, Identifier) else "FILTER_EXPRESSION_SCAN"

    def cost(self, expr: Expression) -> int:
        if isinstance(expr, Function) and expr.name in {"and", "or", "not"}:
            return max(self.cost(a) for a in expr.args)
        path = self.access_path(to_leaf(expr))
        return {"FILTER_SORTED_INDEX": 0, "FILTER_INVERTED_INDEX": 1, "FILTER_RANGE_INDEX": 2}.get(
            path, 3
        )

    # ---- evaluation ---------------------------------------------------------------------------
    def evaluate(self, expr: Expression | None, candidates: DocSet | None = None) -> DocSet:
        if expr is None:
            return DocSet.all(self.n)
        if isinstance(expr, Literal):
            return DocSet.all(self.n) if expr.value else DocSet.empty(self.n)
        if not isinstance(expr, Function):
            raise QueryValidationError(f"WHERE needs a predicate, got {expr}")
        if expr.name == "and":
            result = candidates or DocSet.all(self.n)
            for child in sorted(expr.args, key=self.cost):
                result = intersect(result, self.evaluate(child, result))
                if result.kind == "empty":
                    break
            return result
        if expr.name == "or":
            result = DocSet.empty(self.n)
            for child in expr.args:
                result = union(result, self.evaluate(child, candidates))
                if result.kind == "all":
                    break
            return result
        if expr.name == "not":
            inner = self.falses(expr.args[0], candidates)
            return intersect(inner, candidates) if candidates is not None else inner
        if expr.name in NULL_OPS and isinstance(expr.args[0], Identifier):
            return self.leaf(to_leaf(expr), candidates)  # the null value vector answers
        if needs_nullable(expr, self.null_handling):
            return self._scan_nullable(expr, candidates)
        return self._without_nulls(self.leaf(to_leaf(expr), candidates), expr)

    def falses(self, expr: Expression, candidates: DocSet | None = None) -> DocSet:
        """The docs where ``expr`` is false: with null handling neither true nor NULL (SQL's
        three-valued logic, as Pinot's filter operators' ``getFalses``), so that NOT of a
        predicate on a NULL value matches nothing; without it, every doc not matched."""
        if not self.null_handling:
            return complement(self.evaluate(expr, candidates))
        if isinstance(expr, Literal):
            return DocSet.empty(self.n) if expr.value is None or expr.value else DocSet.all(self.n)
        if isinstance(expr, Function) and expr.name in ("and", "or", "not"):
            if expr.name == "not":
                return self.evaluate(expr.args[0], candidates)
            parts = [self.falses(a, candidates) for a in expr.args]
            result = parts[0]
            for part in parts[1:]:
                result = union(result, part) if expr.name == "and" else intersect(result, part)
            return result
        trues = self.evaluate(expr, candidates)
        return complement(union(trues, self._unknowns(expr)))

    def _unknowns(self, expr: Expression) -> DocSet:
        """The docs where the predicate ``expr`` is NULL (after ``evaluate`` of it)."""
        if (
            isinstance(expr, Function)
            and expr.name in NULL_OPS
            and isinstance(expr.args[0], Identifier)
        ):
            return DocSet.empty(self.n)
        if id(expr) in self._scanned_nulls:
            return self._scanned_nulls[id(expr)]
        docs = DocSet.empty(self.n)
        for column in columns_of(expr):
            nulls = self.view.null_bitmap(column)
            if nulls is not None:
                docs = union(docs, DocSet.of_bitmap(self.n, nulls))
        return docs

    def _without_nulls(self, docs: DocSet, expr: Expression) -> DocSet:
        """``docs`` minus the null docs of every column ``expr`` reads (with null handling)."""
        if not self.null_handling or docs.kind == "empty":
            return docs
        for column in columns_of(expr):
            nulls = self.view.null_bitmap(column)
            if nulls is not None:
                docs = intersect(docs, complement(DocSet.of_bitmap(self.n, nulls)))
        return docs

    def _scan_nullable(self, expr: Function, candidates: DocSet | None) -> DocSet:
        """A predicate whose answer depends on which values are NULL (IS NULL of an
        expression, COALESCE, CASE ... or, with null handling, anything that does not simply
        propagate NULL), evaluated row by row with the columns' null vectors."""
        docs = self._restrict(candidates)
        known, masks = {}, {}
        for name in columns_of(expr):
            if not self.view.meta(name).single_value:
                raise QueryValidationError(
                    f"Multi-value column '{name}' can only be filtered on directly"
                )
            known[Identifier(name)] = self.view.sv_values(name, docs)
            mask = self.view.null_mask(name)
            masks[Identifier(name)] = mask if mask is None or docs is None else mask[docs]
        count = self.n if docs is None else len(docs)
        self.entries_scanned += count * max(len(known), 1)
        values, nulls = evaluate_nullable(
            expr, known.get, masks.get, count, sql_nulls=self.null_handling
        )
        hit = np.asarray(values, dtype=bool)
        if self.null_handling:
            unknown = DocSet.empty(self.n)
            if nulls is not None:
                hit = hit & ~nulls
                unknown = (
                    DocSet.of_ids(self.n, docs[nulls])
                    if docs is not None
                    else DocSet.of_mask(nulls)
                )
            self._scanned_nulls[id(expr)] = unknown
        return DocSet.of_ids(self.n, docs[hit]) if docs is not None else DocSet.of_mask(hit)

    def leaf(self, leaf: Leaf, candidates: DocSet | None) -> DocSet:
        checkpoint()  # each predicate may scan the segment
        path = self.access_path(leaf)
        if path == "FILTER_CONSTANT":
            value = evaluate(leaf.expr, lambda e: None, 1)
            return DocSet.all(self.n) if bool(value[0]) else DocSet.empty(self.n)
        if path == "FILTER_NULL_VALUE_INDEX":
            return self._null_docs(leaf)
        meta = self.view.meta(leaf.column) if leaf.column else None
        if (
            leaf.op in RANGE_OPS
            and isinstance(leaf.lhs, Identifier)
            and meta.single_value
            and meta.data_type.is_numeric
        ):
            docs = self._range_by_min_max(leaf, meta, path, candidates)
            if docs is not None:
                return docs
        if path == "FILTER_RANGE_INDEX" and not meta.has_dictionary:
            return self._range_docs(leaf)
        if meta is None or not meta.has_dictionary:
            return self._scan_values(leaf, candidates, meta)
        # An index answer depends only on the predicate and the immutable segment: a repeated
        # query reuses it instead of reading and copying the index again.
        key = memo_key("docs", leaf) if path in _INDEX_PATHS else None
        cached = self.view.memo(key) if key is not None else None
        if cached is not None:
            return cached
        match = self.match_ids(leaf)
        if match is None:  # nothing in the dictionary matches
            return DocSet.all(self.n) if leaf.exclusive else DocSet.empty(self.n)
        if path == "FILTER_SORTED_INDEX":
            docs = self._sorted_docs(leaf.column, match)
        elif path == "FILTER_INVERTED_INDEX":
            docs = self._inverted_docs(leaf.column, match, meta.cardinality)
        elif path == "FILTER_RANGE_INDEX":
            docs = self._range_docs(leaf)
            return docs
        else:
            docs = None
        if docs is None:
            return self._scan_ids(leaf, match, candidates, meta)
        docs = complement(docs) if leaf.exclusive else docs
        if key is not None:
            for array in (docs.mask, docs.doc_ids):
                if array is not None:  # shared from now on: a write would be a bug
                    array.flags.writeable = False
            self.view.remember(key, docs)
        return docs

    def _range_by_min_max(self, leaf: Leaf, meta, path: str, candidates) -> DocSet | None:
        """All or no docs when the segment's min/max lie inside or outside the range; else,
        for a raw column without a range index, the zone-map scan (None: scan as usual)."""
        leaf = typed_literals(leaf, meta)
        bounds = RangeBounds.of(leaf.op, leaf.operands)
        whole = bounds.on_min_max(meta.min_value, meta.max_value)
        if whole is not None:
            return DocSet.all(self.n) if whole else DocSet.empty(self.n)
        if path != "FILTER_FULL_SCAN" or meta.has_dictionary:
            return None
        if self._restrict(candidates) is not None:  # few candidates: the scan reads only them
            return None
        found = zone_scan(self.view, leaf.column, bounds)
        if found is None:
            return None
        self.entries_scanned += found[1]
        return found[0]

    def _null_docs(self, leaf: Leaf) -> DocSet:
        """IS [NOT] NULL from the segment's null value vector, which the writer builds when the
        table has ``nullHandlingEnabled``. Without one, as in Pinot, no value is null: the
        input's nulls were stored as the column's default null value."""
        nulls = self.view.null_bitmap(leaf.column)
        docs = DocSet.of_bitmap(self.n, nulls) if nulls is not None else DocSet.empty(self.n)
        return complement(docs) if leaf.op == "is_not_null" else docs

    # ---- dictionary matching (engine.query.predicate) ----------------------------------------
    def match_ids(self, leaf: Leaf):
        """Dictionary ids ``leaf`` accepts in this segment; see ``predicate.match_ids``."""
        return match_ids(self.view, leaf)

    match_list = staticmethod(match_list)

    # ---- index access --------------------------------------------------------------------------
    def _sorted_docs(self, column: str, match) -> DocSet | None:
        reader = self.view.reader(column)
        if match[0] == "range":
            start = reader.sorted_doc_range(match[1])[0]
            end = reader.sorted_doc_range(match[2] - 1)[1]
            return DocSet.range(self.n, start, end)
        ids = match[1]
        if len(ids) > MAX_BITMAPS_TO_UNION:
            return None
        result = DocSet.empty(self.n)
        for i in ids.tolist():
            start, end = reader.sorted_doc_range(i)
            result = union(result, DocSet.range(self.n, start, end))
        return result

    def _inverted_docs(self, column: str, match, card: int) -> DocSet | None:
        index = self.view.reader(column).inverted_index
        ids = self.match_list(match)
        if len(ids) <= card // 2 + 1:
            if len(ids) > MAX_BITMAPS_TO_UNION:
                return None
            return DocSet.of_bitmap(
                self.n,
                BitMap.union(*(index.bitmap(int(i)) for i in ids))
                if len(ids) > 1
                else BitMap(index.bitmap(int(ids[0]))),
            )
        others = np.flatnonzero(~match_lut(match, card))
        if len(others) > MAX_BITMAPS_TO_UNION:
            return None
        excluded = (
            BitMap.union(*(index.bitmap(int(i)) for i in others)) if len(others) else BitMap()
        )
        if not self.view.meta(column).single_value:
            return None  # MV: a doc may hold matching and non-matching ids; scan instead
        return DocSet.of_bitmap(self.n, BitMap.flip(excluded, 0, self.n))

    def _range_docs(self, leaf: Leaf) -> DocSet:
        index = self.view.reader(leaf.column).range_index
        op, v = leaf.op, leaf.operands
        if op == "between":
            bitmap = index.doc_ids(v[0], v[1], True, True)
        elif op in ("less_than", "less_than_or_equal"):
            bitmap = index.doc_ids(None, v[0], True, op == "less_than_or_equal")
        else:
            bitmap = index.doc_ids(v[0], None, op == "greater_than_or_equal", True)
        return DocSet.of_bitmap(self.n, BitMap(bitmap))

    # ---- scans ---------------------------------------------------------------------------------
    def _restrict(self, candidates: DocSet | None) -> np.ndarray | None:
        if candidates is not None and candidates.kind != "all" and candidates.count() < self.n // 4:
            return candidates.ids()
        return None

    def _scan_ids(self, leaf: Leaf, match, candidates: DocSet | None, meta) -> DocSet:
        column = leaf.column
        docs = self._restrict(candidates)
        if meta.single_value:
            ids = self.view.dict_ids(column)
            if docs is not None:
                ids = ids[docs]
            self.entries_scanned += len(ids)
            if match[0] == "range":
                hit = (ids >= match[1]) & (ids < match[2]) if match[1] > 0 else ids < match[2]
            elif len(match[1]) == 1:
                hit = ids == match[1][0]  # one value: a compare beats a table lookup
            else:
                hit = match_lut(match, meta.cardinality)[ids]
        else:
            offsets, flat, _ = self.view.mv(column)
            lut = match_lut(match, meta.cardinality)
            hit = self._any_per_doc(lut[flat], offsets, docs)
        if leaf.exclusive:
            hit = ~hit
        return DocSet.of_ids(self.n, docs[hit]) if docs is not None else DocSet.of_mask(hit)

    def _any_per_doc(
        self, value_hits: np.ndarray, offsets: np.ndarray, docs: np.ndarray | None
    ) -> np.ndarray:
        csum = np.zeros(len(value_hits) + 1, dtype=np.int64)
        np.cumsum(value_hits, out=csum[1:])
        starts, ends = (
            (offsets[:-1], offsets[1:]) if docs is None else (offsets[docs], offsets[docs + 1])
        )
        self.entries_scanned += int((ends - starts).sum())
        return (csum[ends] - csum[starts]) > 0

    def _scan_values(self, leaf: Leaf, candidates: DocSet | None, meta) -> DocSet:
        docs = self._restrict(candidates)
        columns = columns_of(leaf.expr)
        if meta is not None and isinstance(leaf.lhs, Identifier) and meta.data_type.is_numeric:
            leaf = typed_literals(leaf, meta)
        if meta is not None and not meta.single_value:
            offsets, _, flat = self.view.mv(leaf.column)
            op = EXCLUSIVE.get(leaf.op, leaf.op)
            inclusive = Function(op, leaf.expr.args)
            value_hits = np.asarray(
                evaluate(inclusive, {Identifier(leaf.column): flat}.get, len(flat)), dtype=bool
            )
            hit = self._any_per_doc(value_hits, offsets, docs)
            if leaf.exclusive:
                hit = ~hit
        else:
            known = {}
            for name in columns:
                if not self.view.meta(name).single_value:
                    raise QueryValidationError(
                        f"Multi-value column '{name}' can only be filtered on directly"
                    )
                known[Identifier(name)] = self.view.sv_values(name, docs)
            count = self.n if docs is None else len(docs)
            self.entries_scanned += count * max(len(columns), 1)
            hit = _evaluate_in_slices(leaf.expr, known, count)
        return DocSet.of_ids(self.n, docs[hit]) if docs is not None else DocSet.of_mask(hit)


# rows a scan-based predicate evaluates between two cancellation checkpoints: a regular
# expression over a 100k-row text column takes tens of ms, a cancel must not wait for it all
SCAN_SLICE_ROWS = 32_768


def _evaluate_in_slices(expr: Expression, known: dict, count: int) -> np.ndarray:
    """``expr`` over ``count`` rows as a bool mask, ``SCAN_SLICE_ROWS`` rows at a time with a
    cancellation checkpoint between slices (row-wise functions: slices give the same rows)."""
    if count <= SCAN_SLICE_ROWS:
        return np.asarray(evaluate(expr, known.get, count), dtype=bool)
    out = np.empty(count, dtype=bool)
    for start in range(0, count, SCAN_SLICE_ROWS):
        checkpoint()
        end = min(start + SCAN_SLICE_ROWS, count)
        part = {column: values[start:end] for column, values in known.items()}
        out[start:end] = np.asarray(evaluate(expr, part.get, end - start), dtype=bool)
    return out
