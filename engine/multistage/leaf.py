"""The leaf stage: a table's rows on this server, read by the single-stage engine.

The leaf's filter is compiled by the single-stage planner and evaluated per segment with
its machinery: segment pruning (min/max, bloom, partition), the sorted, inverted and range
indexes. Dynamic filters then narrow the matching docs: the keys a join's other side holds
(``engine.multistage.dynamic_filter``), tested once per dictionary entry and applied to the
docs' dictionary ids, so a fact row no dimension row can match is never read. The columns
the stages above read come out as Arrow arrays straight from the segment's dictionaries and
forward indexes (Arrow's take, no Python values). With ``enableNullHandling=true`` a value
whose null bit is set is a real NULL; without, the stored default flows as data, as in Pinot.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.multistage.options import option
from engine.query.decoded_cache import DecodedCache
from engine.query.docset import DocSet
from engine.query.errors import QueryTimeoutError
from engine.query.expressions import Identifier
from engine.query.filter import FilterEvaluator
from engine.query.intermediate import empty_stats
from engine.query.plan import QueryPlan
from engine.query.projection import Projection
from engine.query.pruning import prune_reason
from engine.query.segment_view import SegmentView

Docs = np.ndarray | slice | None  # sorted doc ids, a doc range, or every doc
POSTINGS_SHARE = 1 / 16  # a dynamic filter keeping fewer docs reads them from postings


def single_stage_options(options: dict[str, str]) -> dict[str, str]:
    """The query options the single-stage engine reads in a leaf, and where its states are
    merged: null handling decides what a filter matches and the shape of each state."""
    return {"enableNullHandling": option(options, "enableNullHandling", "false").lower()}


def filter_plan(compile_plan, table: str, columns: list[str], where: str | None, schema,
                options: dict[str, str]) -> QueryPlan:  # fmt: skip
    """The single-stage plan whose filter the leaf evaluates (its select list is unused)."""
    first = '"' + columns[0].replace('"', '""') + '"'
    sql = f'SELECT {first} FROM "{table}"' + (f" WHERE {where}" if where else "")
    return compile_plan(sql, schema, single_stage_options(options))


def scan(plan: QueryPlan, segments: list, columns: list[str], schema: pa.Schema,
         cache: DecodedCache | None, deadline: float,
         default_valued: frozenset[str] = frozenset(),
         dynamic: list[tuple[str, KeySet]] = ()) -> tuple[pa.Table, dict]:  # fmt: skip
    """The rows of ``segments`` that pass the plan's filter and whose ``dynamic`` columns
    take one of the given values, as ``schema`` (the columns renamed to field ids), and
    Pinot's scan counters."""
    stats = empty_stats()
    parts: list[pa.Table] = []
    null_handling = plan.null_handling
    for segment in segments:
        if time.monotonic() > deadline:
            raise QueryTimeoutError("Query timed out in the leaf stage")
        view = SegmentView(segment, cache)
        stats["numSegmentsQueried"] += 1
        stats["totalDocs"] += view.n
        if plan.filter is not None and prune_reason(view, plan.filter):
            continue
        stats["numSegmentsProcessed"] += 1
        tests = key_tests(view, dynamic)
        if plan.filter is None or _few_posted(view, tests):
            # the leaf's filter is also applied above the leaf (engine.multistage.optimize), so
            # when a dynamic filter's postings keep few docs its pass over every doc is skipped
            docs = DocSet.all(view.n)
        else:
            evaluator = FilterEvaluator(view, null_handling)
            docs = evaluator.evaluate(plan.filter)
            stats["numEntriesScannedInFilter"] += evaluator.entries_scanned
        doc_ids, matched = _doc_ids(docs), docs.count()
        if matched and tests:
            doc_ids, matched, scanned = narrow(view, doc_ids, matched, dynamic, tests)
            stats["numEntriesScannedInFilter"] += scanned
        if not matched:
            continue
        stats["numSegmentsMatched"] += 1
        stats["numDocsScanned"] += matched
        arrays = [
            _column(view, column, doc_ids, field.type, null_handling and column not in
                    default_valued)
            for column, field in zip(columns, schema, strict=True)
        ]  # fmt: skip
        stats["numEntriesScannedPostFilter"] += matched * len(columns)
        parts.append(pa.Table.from_arrays(arrays, schema=schema))
    if not parts:
        return schema.empty_table(), stats
    return pa.concat_tables(parts), stats


def _doc_ids(docs: DocSet) -> Docs:
    if docs.kind == "all":
        return None
    if docs.kind == "range":
        return slice(docs.start, docs.end)
    return docs.ids()


# --- dynamic filters ---------------------------------------------------------------------------
class KeySet:
    """The values a dynamic filter keeps, prepared once for every segment. Integers over a
    compact range become a table of flags indexed by value (membership is one gather);
    other numbers a sorted array, found in a segment's sorted dictionary by binary search;
    text stays an Arrow array for a hash lookup."""

    def __init__(self, values: pa.Array) -> None:
        self.type = values.type
        self.values = values
        self.sorted: np.ndarray | None = None
        self.flags: np.ndarray | None = None  # flags[v - low]: whether v is a key
        self.low = 0
        if pa.types.is_integer(values.type) and len(values):
            numbers = values.drop_null().cast(pa.int64()).to_numpy()
            low, high = (int(numbers.min()), int(numbers.max())) if len(numbers) else (0, -1)
            if high - low < 8 * len(numbers) + (1 << 16):
                self.low, self.flags = low, np.zeros(high - low + 1, dtype=bool)
                self.flags[numbers - low] = True
                return
            self.sorted = np.unique(numbers)
        elif pa.types.is_floating(values.type):
            self.sorted = np.unique(values.drop_null().to_numpy(zero_copy_only=False))

    def members(self, dictionary: np.ndarray, arrow: pa.Array) -> np.ndarray | None:
        """Whether each entry of a segment's sorted ``dictionary`` (``arrow``: the same as an
        Arrow array) is a key; None when the two are not of one kind."""
        common = common_key_type(arrow.type, self.type)
        if common is None:
            return None
        if self.flags is not None and pa.types.is_integer(arrow.type):
            return self._flagged(dictionary, ordered=True)
        if self.sorted is None and self.flags is None:
            return _is_in(arrow, self.values, common)
        keys = self._numbers().astype(common.to_pandas_dtype(), copy=False)
        found = np.zeros(len(dictionary), dtype=bool)
        at = np.searchsorted(dictionary, keys)
        inside = at < len(dictionary)
        at, keys = at[inside], keys[inside]
        found[at[dictionary[at] == keys]] = True
        return found

    def test(self, array: pa.Array) -> np.ndarray | None:
        """Whether each value of ``array`` (a raw column's) is a key."""
        common = common_key_type(array.type, self.type)
        if self.flags is not None and pa.types.is_integer(array.type):
            return self._flagged(array.to_numpy(zero_copy_only=False))
        return None if common is None else _is_in(array, self.values, common)

    def _flagged(self, numbers: np.ndarray, ordered: bool = False) -> np.ndarray:
        """The flags of ``numbers``; when they are ``ordered`` (a sorted dictionary), only
        the run inside the flags' range is looked up."""
        found = np.zeros(len(numbers), dtype=bool)
        if ordered:
            lo, hi = np.searchsorted(numbers, [self.low, self.low + len(self.flags)])
            found[lo:hi] = np.take(self.flags, numbers[lo:hi].astype(np.int64) - self.low)
            return found
        offsets = numbers.astype(np.int64) - self.low
        inside = (offsets >= 0) & (offsets < len(self.flags))
        found[inside] = self.flags[offsets[inside]]
        return found

    def _numbers(self) -> np.ndarray:
        if self.sorted is None:  # flags of integers, asked against a float dictionary
            self.sorted = np.flatnonzero(self.flags) + self.low
        return self.sorted


def _is_in(array: pa.Array, values: pa.Array, common: pa.DataType) -> np.ndarray:
    found = pc.is_in(array.cast(common), value_set=values.cast(common), skip_nulls=True)
    return found.fill_null(False).to_numpy(zero_copy_only=False)


def narrow(view: SegmentView, doc_ids: Docs, matched: int, dynamic: list[tuple[str, KeySet]],
           tests: list | None = None) -> tuple[Docs, int, int]:  # fmt: skip
    """(docs, how many, entries scanned) of ``doc_ids`` whose columns take the values of
    ``dynamic`` (``tests``: its ``key_tests`` when made already)."""
    scanned = 0
    for _, column, keys, member in key_tests(view, dynamic) if tests is None else tests:
        posted = _posted(view, column, member, doc_ids) if member is not None else None
        if posted is not None:  # read like an inverted index: no entry scanned
            doc_ids, matched = posted, len(posted)
        elif member is not None:
            ids = np.asarray(view.dict_ids(column))  # (not a memmap: no per-slice overhead)
            keep = np.take(member, _at(ids, doc_ids))
        else:
            raw = view.sv_values(column, None)
            keep = keys.test(pa.array(raw if doc_ids is None else raw[doc_ids]))
            if keep is None:
                continue
        if posted is None:
            scanned += matched
            doc_ids = _kept(doc_ids, keep)
            matched = len(doc_ids)
        if not matched:
            break
    return doc_ids, matched, scanned


def key_tests(view: SegmentView, dynamic: list[tuple[str, KeySet]]) -> list:
    """The tests of ``dynamic`` on this segment, most selective first: (share of dictionary
    entries kept, column, keys, member flags per entry or None for a raw column).
    Dictionary columns test each entry once; a test keeping every entry is left out."""
    tests = []
    for column, keys in dynamic:
        if not view.meta(column).single_value:
            continue  # a multi-value key matches by any element: left to the join
        if view.is_dict_sv(column):
            member = keys.members(view.dictionary(column), _arrow_dictionary(view, column))
            if member is not None:
                kept = int(np.count_nonzero(member))
                if kept < len(member):
                    tests.append((kept / max(len(member), 1), column, keys, member))
        else:
            tests.append((1.0, column, keys, None))
    return sorted(tests, key=lambda t: t[0])


def _few_posted(view: SegmentView, tests: list) -> bool:
    """Whether the most selective test keeps so few docs that they are read from postings."""
    if not tests or tests[0][3] is None:
        return False
    _, column, _, member = tests[0]
    counts, _ = _runs(view, column, len(member))
    return int(counts[member].sum()) <= view.n * POSTINGS_SHARE


def _runs(view: SegmentView, column: str, entries: int) -> tuple[np.ndarray, np.ndarray]:
    """The docs of each dictionary entry of ``column`` and where its run starts in the
    postings, kept per segment."""
    runs = view.memo(("dictruns", column))
    if runs is None:
        counts = np.bincount(np.asarray(view.dict_ids(column)), minlength=entries)
        runs = counts, np.cumsum(counts) - counts
        view.remember(("dictruns", column), runs)
    return runs


def _posted(view: SegmentView, column: str, member: np.ndarray, doc_ids: Docs
            ) -> np.ndarray | None:  # fmt: skip
    """The sorted docs of ``doc_ids`` (every doc, or a range) whose ``column`` takes a
    dictionary entry flagged in ``member``, gathered from the column's postings (its docs
    grouped by dictionary id, built once per segment like an inverted index) when they are
    at most ``POSTINGS_SHARE`` of the docs: then reading them beats a pass over every doc.
    None otherwise (a pass is as cheap)."""
    if doc_ids is not None and not isinstance(doc_ids, slice):
        return None
    counts, run_starts = _runs(view, column, len(member))
    span = view.n if doc_ids is None else doc_ids.stop - doc_ids.start
    selected = np.flatnonzero(member)
    lengths = counts[selected]
    if not lengths.all():  # (an entry no doc of the segment takes)
        selected, lengths = selected[lengths > 0], lengths[lengths > 0]
    total = int(lengths.sum())
    if total > span * POSTINGS_SHARE:
        return None
    if not total:
        return np.zeros(0, dtype=np.int64)
    order = view.memo(("postings", column))
    if order is None:
        order = np.argsort(view.dict_ids(column), kind="stable").astype(np.int32)
        view.remember(("postings", column), order)
    starts = run_starts[selected]
    # positions in ``order``: each selected entry's run, as one cumulative sum of steps
    steps = np.ones(total, dtype=np.int64)
    steps[0] = starts[0]
    ends = np.cumsum(lengths)[:-1]
    steps[ends] = starts[1:] - (starts[:-1] + lengths[:-1]) + 1
    docs = np.sort(order[np.cumsum(steps)]).astype(np.int64)
    if isinstance(doc_ids, slice):
        docs = docs[(docs >= doc_ids.start) & (docs < doc_ids.stop)]
    return docs


def common_key_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """Integers compare as int64, other numbers as float64, text as string (the planner
    pairs only keys of one kind; anything else is not narrowed)."""
    for check, common in ((pa.types.is_integer, pa.int64()), (_is_number, pa.float64()),
                          (_is_text, pa.string())):  # fmt: skip
        if check(a) and check(b):
            return common
    return None


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _at(values: np.ndarray, doc_ids: Docs) -> np.ndarray:
    """``values`` of ``doc_ids``: np.take, as fancy indexing would first copy the ids."""
    if doc_ids is None:
        return values
    return values[doc_ids] if isinstance(doc_ids, slice) else np.take(values, doc_ids)


def _kept(doc_ids: Docs, keep: np.ndarray) -> np.ndarray:
    if doc_ids is None:
        return np.flatnonzero(keep)
    if isinstance(doc_ids, slice):
        return np.flatnonzero(keep) + doc_ids.start
    return doc_ids[keep]


# --- columns -----------------------------------------------------------------------------------
def _arrow_dictionary(view: SegmentView, column: str) -> pa.Array:
    """The column's dictionary as an Arrow array, kept with the segment's decoded data."""
    key = ("arrowdict", column)
    found = view.memo(key)
    if found is None:
        found = pa.array(view.dictionary(column))
        view.remember(key, found)
    return found


def _column(view: SegmentView, column: str, doc_ids: Docs, target: pa.DataType,
            nulls: bool) -> pa.Array:  # fmt: skip
    if view.is_dict_sv(column) and not nulls:
        ids = np.asarray(view.dict_ids(column))
        values = _arrow_dictionary(view, column).take(_at(ids, doc_ids))
    else:
        values = Projection(view, doc_ids).selection_column(Identifier(column))
        if nulls:
            values = _with_nulls(values, view, column, doc_ids)
    return _cast(values, target)


def _with_nulls(values: pa.Array, view: SegmentView, column: str, doc_ids: Docs) -> pa.Array:
    mask = view.null_mask(column)
    if mask is None:
        return values
    selected = mask if doc_ids is None else mask[doc_ids]
    if not selected.any():
        return values
    return pc.if_else(pa.array(~selected), values, pa.scalar(None, values.type))


def _cast(values: pa.Array, target: pa.DataType) -> pa.Array:
    if values.type == target:
        return values
    if pa.types.is_timestamp(target) and pa.types.is_integer(values.type):
        return values.cast(pa.int64()).cast(target)
    if pa.types.is_boolean(target) and pa.types.is_integer(values.type):
        return values.cast(pa.bool_())
    return values.cast(target, safe=False)
