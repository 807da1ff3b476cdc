"""Selection queries on one segment: the rows of the matching docs, the first ``offset +
limit`` of them by the ORDER BY when there is one (``o0..`` sort columns beside the selected
``c0..``, and with null handling ``n0..``, True where the key is NULL)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.query.combine import order_keys, select_top
from engine.query.docset import DocSet
from engine.query.expressions import Identifier
from engine.query.intermediate import IntermediateResult
from engine.query.plan import QueryPlan
from engine.query.projection import Projection
from engine.query.segment_view import SegmentView


def select_rows(
    plan: QueryPlan, view: SegmentView, docs: DocSet, result: IntermediateResult
) -> IntermediateResult:
    """Fill ``result.rows`` with the selected rows of ``docs``."""
    keep = plan.offset + plan.limit
    stats = result.stats
    if not plan.order_by:
        if docs.kind == "all":
            doc_ids = np.arange(min(keep, view.n), dtype=np.int64)
        elif docs.kind == "range":
            doc_ids = np.arange(docs.start, min(docs.end, docs.start + keep), dtype=np.int64)
        else:
            doc_ids = docs.ids()[:keep]
    else:
        doc_ids = docs.ids() if docs.kind != "all" else None
        if docs.count() > keep:
            doc_ids = _top_docs(plan, view, doc_ids, keep)
    projection = Projection(view, doc_ids)
    columns = {f"c{i}": projection.selection_column(e) for i, e in enumerate(plan.select)}
    columns.update(_order_columns(plan, projection, by_ids=False))
    stats["numDocsScanned"] = projection.n
    stats["numEntriesScannedPostFilter"] = projection.n * len(projection.columns_read)
    result.rows = pa.table(columns) if projection.n or columns else None
    if result.rows is not None and plan.order_by:
        result.rows = select_top(plan, result.rows)
    return result


def _order_columns(plan: QueryPlan, projection: Projection, by_ids: bool) -> dict:
    """The sort columns of the selected docs. ``by_ids``: a sorted dictionary's ids stand for
    its values (id order is value order), which saves decoding them."""
    view = projection.view
    columns = {}
    for i, order in enumerate(plan.order_by):
        expr = order.expr
        plain = by_ids and isinstance(expr, Identifier) and view.is_dict_sv(expr.name)
        nulls = None
        if plain:
            values = projection._ids(expr.name)
            nulls = projection.null_mask(expr.name) if plan.null_handling else None
        elif plan.null_handling:
            values, nulls = projection.nullable_values(expr)
        else:
            values = projection.values(expr)
        if plan.null_handling:
            columns[f"n{i}"] = pa.array(np.zeros(projection.n, bool) if nulls is None else nulls)
        # NULL keys tie (Arrow nulls), so the next ORDER BY key orders them
        columns[f"o{i}"] = pa.array(values, mask=nulls)
    return columns


def _top_docs(
    plan: QueryPlan, view: SegmentView, doc_ids: np.ndarray | None, keep: int
) -> np.ndarray:
    """Doc ids of the ``keep`` first rows by the ORDER BY."""
    table = pa.table(_order_columns(plan, Projection(view, doc_ids), by_ids=True))
    index = pc.select_k_unstable(table, k=keep, sort_keys=order_keys(plan)).to_numpy()
    all_ids = np.arange(view.n, dtype=np.int64) if doc_ids is None else doc_ids
    return np.sort(all_ids[index])
