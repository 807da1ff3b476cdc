"""Skip a segment before reading any column: a filter that cannot match given the column's
min/max, bloom filter or partitions (EQUALS / IN on the partition column) prunes it.
Only inclusive predicates on a plain column can prune; OR prunes when every branch does."""

from __future__ import annotations

from engine.query.expressions import Expression, Function, Identifier, Literal
from engine.query.predicate import to_leaf
from engine.query.segment_view import SegmentView
from engine.spi.partition import recorded_function


def prune_reason(view: SegmentView, expr: Expression | None) -> str | None:
    """Why the segment cannot match ``expr`` ("min/max of X", "bloom filter of X",
    "partition of X"), or None when it might."""
    if expr is None or not isinstance(expr, Function):
        if isinstance(expr, Literal) and not expr.value:
            return "constant false filter"
        return None
    if expr.name == "and":
        return next((r for r in (prune_reason(view, a) for a in expr.args) if r), None)
    if expr.name == "or":
        reasons = [prune_reason(view, a) for a in expr.args]
        return reasons[0] if all(reasons) else None
    if expr.name == "not":
        return None
    leaf = to_leaf(expr)
    if not isinstance(leaf.lhs, Identifier) or leaf.column is None or not view.has(leaf.column):
        return None
    meta = view.meta(leaf.column)
    op, values = leaf.op, leaf.operands
    if op in ("equals", "in"):
        if values and all(not _within(meta, v, v) for v in values):
            return f"min/max of {leaf.column}"
        bloom = view.reader(leaf.column).bloom_filter if "bloom" in meta.indexes else None
        if bloom is not None and values and not any(_might_contain(bloom, v) for v in values):
            return f"bloom filter of {leaf.column}"
        if meta.partitions is not None and meta.partition_function and values:
            function = recorded_function(
                meta.partition_function, meta.num_partitions, meta.partition_function_config
            )
            wanted = {
                function.partition_of_literal(v, meta.data_type) if function else None
                for v in values
            }
            if None not in wanted and not wanted & set(meta.partitions):
                return f"partition of {leaf.column}"
    elif (
        (op == "between" and not _within(meta, values[0], values[1]))
        or (
            op in ("less_than", "less_than_or_equal")
            and not _within(meta, None, values[0], hi_incl=op.endswith("equal"))
        )
        or (
            op in ("greater_than", "greater_than_or_equal")
            and not _within(meta, values[0], None, lo_incl=op.endswith("equal"))
        )
    ):
        return f"min/max of {leaf.column}"
    return None


def _typed(meta, value):
    if meta.data_type.is_numeric:
        if isinstance(value, str):
            return float(value)
        return value
    return str(value)


def _within(meta, lo, hi, lo_incl: bool = True, hi_incl: bool = True) -> bool:
    """Might [lo, hi] intersect [min, max]? True when unknown or not comparable."""
    low, high = meta.min_value, meta.max_value
    if low is None or high is None:
        return True
    try:
        if lo is not None:
            lo = _typed(meta, lo)
            if lo > _typed(meta, high) or (not lo_incl and lo == _typed(meta, high)):
                return False
        if hi is not None:
            hi = _typed(meta, hi)
            if hi < _typed(meta, low) or (not hi_incl and hi == _typed(meta, low)):
                return False
        if lo is not None and hi is not None and lo > hi:
            return False
    except (TypeError, ValueError):
        return True
    return True


def _might_contain(bloom, value) -> bool:
    try:
        return bool(bloom.might_contain(value))
    except (TypeError, ValueError):
        return True
