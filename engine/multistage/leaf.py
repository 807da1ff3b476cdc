"""The leaf stage: a table's rows on this server, read by the single-stage engine.

The leaf's filter is compiled by the single-stage planner and evaluated per segment with
its machinery: segment pruning (min/max, bloom, partition), the sorted, inverted and range
indexes, then the projection of the columns the stages above read. With
``enableNullHandling=true`` a value whose null bit is set is a real NULL; without, the stored
default flows as data, as in Pinot.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def filter_plan(compile_plan, table: str, columns: list[str], where: str | None, schema,
                options: dict[str, str]) -> QueryPlan:  # fmt: skip
    """The single-stage plan whose filter the leaf evaluates (its select list is unused)."""
    first = '"' + columns[0].replace('"', '""') + '"'
    sql = f'SELECT {first} FROM "{table}"' + (f" WHERE {where}" if where else "")
    return compile_plan(sql, schema, {"enableNullHandling": options.get("enableNullHandling",
                                                                       "false")})  # fmt: skip


def scan(plan: QueryPlan, segments: list, columns: list[str], schema: pa.Schema,
         cache: DecodedCache | None, deadline: float,
         default_valued: frozenset[str] = frozenset()) -> tuple[pa.Table, dict]:  # fmt: skip
    """The rows of ``segments`` that pass the plan's filter, as ``schema`` (the columns
    renamed to field ids), and Pinot's scan counters."""
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
        if plan.filter is None:
            docs = DocSet.all(view.n)
        else:
            evaluator = FilterEvaluator(view, null_handling)
            docs = evaluator.evaluate(plan.filter)
            stats["numEntriesScannedInFilter"] += evaluator.entries_scanned
        matched = docs.count()
        if not matched:
            continue
        stats["numSegmentsMatched"] += 1
        stats["numDocsScanned"] += matched
        doc_ids = (
            None
            if docs.kind == "all"
            else (slice(docs.start, docs.end) if docs.kind == "range" else docs.ids())
        )
        projection = Projection(view, doc_ids)
        arrays = []
        for column, field in zip(columns, schema, strict=True):
            values = projection.selection_column(Identifier(column))
            if null_handling and column not in default_valued:
                values = _with_nulls(values, view, column, doc_ids)
            arrays.append(_cast(values, field.type))
        stats["numEntriesScannedPostFilter"] += matched * len(columns)
        parts.append(pa.Table.from_arrays(arrays, schema=schema))
    if not parts:
        return schema.empty_table(), stats
    return pa.concat_tables(parts), stats


def _with_nulls(values: pa.Array, view: SegmentView, column: str, doc_ids) -> pa.Array:
    bitmap = view.reader(column).null_bitmap
    if not bitmap:
        return values
    null_docs = np.fromiter(bitmap, dtype=np.int64, count=len(bitmap))
    if doc_ids is None:
        docs = np.arange(view.n, dtype=np.int64)
    elif isinstance(doc_ids, slice):
        docs = np.arange(doc_ids.start, doc_ids.stop, dtype=np.int64)
    else:
        docs = np.asarray(doc_ids, dtype=np.int64)
    mask = np.isin(docs, null_docs)
    if not mask.any():
        return values
    return pc.if_else(pa.array(~mask), values, pa.scalar(None, values.type))


def _cast(values: pa.Array, target: pa.DataType) -> pa.Array:
    if values.type == target:
        return values
    if pa.types.is_timestamp(target) and pa.types.is_integer(values.type):
        return values.cast(pa.int64()).cast(target)
    if pa.types.is_boolean(target) and pa.types.is_integer(values.type):
        return values.cast(pa.bool_())
    if pa.types.is_list(target) and pa.types.is_list(values.type):
        return values.cast(target, safe=False)
    return values.cast(target, safe=False)
