"""Logical plan -> stages: exchanges where rows must move, then the plan cut at each one.

Distribution rules (Pinot's, ``PinotJoinExchangeNodeInsertRule`` and friends, with
additions that move fewer rows):

* join with equality keys: both sides hash-partitioned on the keys; the right side is
  broadcast instead when it is small (a dimension, a filtered scan under ``BROADCAST_ROWS``
  rows) or the hint asks (``right_distribution_type='broadcast'``), and then the left side
  does not move at all: the join runs in the left side's stage (for SSB, the fact table's
  leaf joins the dimensions where it is read); an inner or right join whose small side is
  the left one broadcasts the left side the same way;
* a scan of a dimension table (``isDimTable``: on every server) that would be broadcast is
  read where the join runs instead, by each of its workers: no exchange at all (Pinot's
  ``tableOptions(is_replicated='true')``, here without a hint); a distribution hint keeps
  the exchange. A lookup join (``join_strategy='lookup'``) reads its dimension so too;
* colocated join (``engine.multistage.colocation``): both sides read tables partitioned
  alike on the key; each side goes 1:1 (``partitioned``) to the join worker of its partition;
* no equality key: right broadcast; a RIGHT or FULL join without keys runs on one worker;
* aggregation: a partial aggregate where the rows are, hash on the group keys, the final
  one (one worker without keys); SUM/COUNT/MIN/MAX/AVG/BOOL_* split, others move the rows;
* window: hash on PARTITION BY (one worker without); sort: top-N where the rows are, then
  one worker; set operations: hash on every column.

The top singleton runs in the broker (stage 0), with everything above it.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.colocation import colocated
from engine.multistage.leaf import single_stage_options
from engine.multistage.leaf_aggregate import as_leaf_aggregate
from engine.multistage.logical import (
    Aggregate,
    Exchange,
    Field,
    FieldIds,
    Filter,
    Join,
    LeafScan,
    Node,
    Project,
    SetOp,
    Sort,
    Unnest,
    Values,
    Window,
    ref,
)
from engine.multistage.scope import column_ids
from engine.query.aggregation import is_aggregation
from engine.query.errors import QueryValidationError
from engine.query.plan import compile_query

BROADCAST_ROWS = 1_000_000  # a right side at most this big (estimated) is broadcast


@dataclasses.dataclass
class Stage:
    id: int
    root: Node  # the stage's operators; Exchange nodes below it are its receives
    send: Exchange | None  # how its rows leave (None: stage 0, the broker's)
    leaves: list[LeafScan] = dataclasses.field(default_factory=list)
    receives: list[tuple[int, Exchange]] = dataclasses.field(default_factory=list)
    workers: list[str] = dataclasses.field(default_factory=list)  # server ids (or "broker")


class PhysicalPlanner:
    def __init__(self, ids: FieldIds, options: dict[str, str]) -> None:
        self.ids = ids
        self.options = options

    def plan(self, root: Node) -> Node:
        """``root`` with exchanges; the top is an exchange to the broker."""
        node = self._visit(root)
        return _singleton(node)

    def _visit(self, node: Node) -> Node:
        if isinstance(node, Join):
            return self._join(node)
        if isinstance(node, Aggregate):
            return self._aggregate(node)
        if isinstance(node, Window):
            inner = self._visit(node.input)
            keys = node.windows[0].args.get("partition_by") or []
            ids = [k.name for k in keys if isinstance(k, exp.Column)]
            exchange = _hash(inner, ids) if ids and len(ids) == len(keys) else _singleton(inner)
            return Window(node.fields, exchange, node.windows, node.hints)
        if isinstance(node, Sort):
            inner = self._visit(node.input)
            if node.limit is not None and not _is_singleton(inner):
                local = Sort(inner.fields, inner, node.keys, node.limit + node.offset, 0)
                inner = local
            return Sort(node.fields, _singleton(inner), node.keys, node.limit, node.offset)
        if isinstance(node, SetOp):
            left, right = self._visit(node.left), self._visit(node.right)
            return SetOp(node.fields, node.kind, node.all, _hash_all(left), _hash_all(right),
                         node.hints)  # fmt: skip
        if isinstance(node, Exchange):
            inner = self._visit(node.input)
            return Exchange(node.fields, inner, node.distribution, node.keys, node.single_row)
        if isinstance(node, Values):
            return node
        inputs = [self._visit(c) for c in node.inputs]
        return node.replace_inputs(inputs) if inputs else node

    # --- joins -------------------------------------------------------------------------------
    def _join(self, join: Join) -> Node:
        left, right = self._visit(join.left), self._visit(join.right)
        left_keys, right_keys = equi_keys(join)
        hints = join.hints
        strategy = hints.get("join_strategy", "").lower()
        if (
            strategy == "lookup"
            and _dim_scan(join.right)
            and join.kind in ("inner", "left", "semi", "anti")
            and not _is_singleton(left)  # (stage 0, the broker's, reads no table)
        ):
            _check_primary_key(join, right_keys)
            return join.replace_inputs([left, right])  # scanned in the left side's stage
        columns = colocated(join, left, right, left_keys, right_keys, self.options) \
            if left_keys else None  # fmt: skip
        if columns is not None:
            # 1:1 to the join's worker of each partition (a hash shuffle if placement cannot)
            return join.replace_inputs([
                Exchange(left.fields, left, "partitioned", left_keys, partition_column=columns[0]),
                Exchange(right.fields, right, "partitioned", right_keys,
                         partition_column=columns[1]),
            ])  # fmt: skip
        if join.kind in ("right", "full") and not left_keys:
            return join.replace_inputs([_singleton(left), _singleton(right)])
        if join.kind in ("asof", "left_asof") and not left_keys:
            return join.replace_inputs([_singleton(left), _singleton(right)])
        broadcast = hints.get("right_distribution_type", "").lower() == "broadcast" or (
            join.kind in ("inner", "left", "semi", "anti", "cross")
            and (not left_keys or _small(join.right))
            and hints.get("right_distribution_type", "").lower() != "hash"
        )
        if broadcast and join.kind not in ("right", "full", "asof", "left_asof"):
            if _is_singleton(left):
                return join.replace_inputs([left, _singleton(right)])
            return join.replace_inputs([left, _broadcast(right, hints)])
        if join.kind in ("inner", "right") and left_keys and _small(join.left) and \
                not _is_singleton(right) and not _distribution_hinted(hints):  # fmt: skip
            # the small side is the left one: it moves to where the right side is read
            return join.replace_inputs([_broadcast(left, hints), right])
        if not left_keys:
            return join.replace_inputs([_singleton(left), _singleton(right)])
        return join.replace_inputs([_hash(left, left_keys), _hash(right, right_keys)])

    # --- aggregation -------------------------------------------------------------------------
    def _aggregate(self, agg: Aggregate) -> Node:
        if not all(fn.is_sql_aggregate(a) for a in agg.aggs):
            try:
                leaf = as_leaf_aggregate(agg, compile_query, single_stage_options(self.options))
                return Exchange(leaf.fields, leaf, "singleton")
            except QueryValidationError:
                # above a join or subquery: the operators run them (engine.multistage.udafs)
                agg = dataclasses.replace(agg, aggs=[_exact_count(a) for a in agg.aggs])
        inner = self._visit(agg.input)
        split = agg.grouping_sets is None and all(_decomposable(a) for a in agg.aggs) and \
            agg.hints.get("is_skip_leaf_stage_group_by", "").lower() != "true"  # fmt: skip
        if _is_singleton(inner):
            return agg.replace_inputs([inner])
        if not split:
            if agg.keys and agg.grouping_sets is None:
                project = _keys_projected(inner, agg, self.ids)
                return dataclasses.replace(agg, input=_hash(project.node, project.key_ids),
                                           keys=project.keys)  # fmt: skip
            return agg.replace_inputs([_singleton(inner)])
        partial, final = split_aggregate(agg, inner, self.ids)
        partial_keys = [f.id for f in partial.fields[: len(agg.keys)]]
        exchange = _hash(partial, partial_keys) if agg.keys else _singleton(partial)
        return final.replace_inputs([exchange])


class _KeysProjected:
    def __init__(self, node, keys, key_ids):
        self.node, self.keys, self.key_ids = node, keys, key_ids


def _keys_projected(inner: Node, agg: Aggregate, ids: FieldIds) -> _KeysProjected:
    """Computed group keys become columns before the shuffle, so rows hash on them."""
    if all(isinstance(k, exp.Column) for k in agg.keys):
        return _KeysProjected(inner, agg.keys, [k.name for k in agg.keys])
    extra = [ids.new("$gk") for _ in agg.keys]
    project = Project([*inner.fields, *extra], inner,
                      [*(ref(f) for f in inner.fields), *agg.keys])  # fmt: skip
    return _KeysProjected(project, [ref(f) for f in extra], [f.id for f in extra])


def split_aggregate(agg: Aggregate, inner: Node, ids: FieldIds) -> tuple[Aggregate, Aggregate]:
    """(partial over ``inner``, final over the partials). Keys stay first in both."""
    partial_aggs: list[exp.Expression] = []
    partial_fields: list[Field] = []
    finals: list[exp.Expression] = []
    for a in agg.aggs:
        call = a.this if isinstance(a, exp.Filter) else a
        name = fn.SQL_AGGREGATES.get(fn.key(fn.call_name(call) or ""), "")

        def partial(func: str, source=a) -> exp.Column:
            p = _with_name(source, func)
            field = ids.new("$p")
            partial_aggs.append(p)
            partial_fields.append(field)
            return ref(field)

        if name == "AVG":
            s, c = partial("SUM"), partial("COUNT")
            finals.append(exp.Div(
                this=exp.Cast(this=_call("SUM", s), to=exp.DataType.build("DOUBLE")),
                expression=exp.Anonymous(this="NULLIF", expressions=[_call("SUM", c.copy()),
                                                                      exp.Literal.number(0)])))  # fmt: skip
        elif name == "COUNT":
            finals.append(exp.Anonymous(this="COALESCE", expressions=[
                _call("SUM", partial("COUNT")), exp.Literal.number(0)]))  # fmt: skip
        else:
            finals.append(_call(name, partial(name)))
    key_fields = agg.fields[: len(agg.keys)]
    partial_key_fields = [ids.new(f.name) for f in key_fields]
    partial_node = Aggregate([*partial_key_fields, *partial_fields], inner, agg.keys,
                             partial_aggs, "leaf", None, agg.hints)  # fmt: skip
    final = Aggregate(agg.fields, partial_node, [ref(f) for f in partial_key_fields], finals,
                      "final", None, agg.hints)  # fmt: skip
    return partial_node, final


_DISTINCT_ESTIMATES = {
    "distinctcounthll",
    "distinctcountsmarthll",
    "distinctcounthllplus",
    "distinctcountull",
    "distinctcountcpcsketch",
    "distinctcountthetasketch",
}


def _distinct_estimate(a: exp.Expression) -> bool:
    if not isinstance(a, exp.Anonymous):
        return False
    name = fn.key(str(a.this))
    # a per-segment count means nothing once rows have left their segments
    return name == "segmentpartitioneddistinctcount" or (
        name in _DISTINCT_ESTIMATES and not is_aggregation(name)
    )


def _exact_count(a: exp.Expression) -> exp.Expression:
    """A distinct-count estimate the single-stage engine lacks, above a join (where no leaf
    can compute it), is answered exactly: COUNT(DISTINCT x), which any estimate approximates."""
    if not _distinct_estimate(a):
        return a
    return exp.Anonymous(this="COUNT", expressions=[exp.Distinct(expressions=[a.expressions[0]])])


def _with_name(a: exp.Expression, func: str) -> exp.Expression:
    copy = a.copy()
    call = copy.this if isinstance(copy, exp.Filter) else copy
    if isinstance(call, exp.Anonymous):
        call.set("this", func)
    return copy


def _call(name: str, arg: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=[arg])


def _decomposable(a: exp.Expression) -> bool:
    call = a.this if isinstance(a, exp.Filter) else a
    if not isinstance(call, exp.Anonymous):
        return False
    if any(isinstance(x, exp.Distinct) for x in call.expressions):
        return False
    return fn.SQL_AGGREGATES.get(fn.key(str(call.this)), "") in fn.DECOMPOSABLE


def conjuncts(e):
    from engine.multistage.clauses import conjuncts as split

    return split(e)


def equi_keys(join: Join) -> tuple[list[str], list[str]]:
    """Field ids of the equality keys (left side, right side) in the join's condition."""
    left_ids = {f.id for f in join.left.fields}
    right_ids = {f.id for f in join.right.fields}
    lefts, rights = [], []
    from engine.multistage.clauses import conjuncts

    for c in conjuncts(join.condition):
        if (
            isinstance(c, exp.EQ)
            and isinstance(c.this, exp.Column)
            and isinstance(c.expression, exp.Column)
        ):
            a, b = c.this.name, c.expression.name
            if a in left_ids and b in right_ids:
                lefts.append(a)
                rights.append(b)
            elif b in left_ids and a in right_ids:
                lefts.append(b)
                rights.append(a)
    return lefts, rights


def _check_primary_key(join: Join, right_keys: list[str]) -> None:
    """A lookup join reads the dimension by its primary key: the condition must bind every
    key column, and only those (Pinot's errors)."""
    leaf = next(n for n in _walk(join.right) if isinstance(n, LeafScan))
    names = {f.id: c for f, c in zip(leaf.fields, leaf.columns, strict=True)}
    keyed = [names.get(k) for k in right_keys]
    primary = list(leaf.table.primary_keys)
    for column in keyed:
        if column is not None and primary and column not in primary:
            raise QueryValidationError(
                f"Lookup join key on column: {column}, which is not a primary key column"
            )
    constant = {
        names.get(c.this.name)
        for n in _walk(join.right)
        if isinstance(n, Filter)
        for c in conjuncts(n.condition)
        if isinstance(c, exp.EQ)
        and isinstance(c.this, exp.Column)
        and isinstance(c.expression, exp.Literal)
    }
    missing = [c for c in primary if c not in keyed and c not in constant]
    if missing:
        raise QueryValidationError(f"Lookup join cannot determine primary key columns: {missing}")


def size_class(num_docs: int) -> int:
    """What the planner reads of a table's row count: empty (0), small enough to broadcast
    (1) or not (2)."""
    return 0 if num_docs <= 0 else (1 if num_docs <= BROADCAST_ROWS else 2)


def _small(node: Node) -> bool:
    leaves = [n for n in _walk(node) if isinstance(n, LeafScan)]
    if not leaves:
        return False
    return all(leaf.table.is_dim_table or size_class(leaf.table.num_docs) == 1
               for leaf in leaves)  # fmt: skip


def _dim_scan(node: Node) -> bool:
    leaves = [n for n in _walk(node) if isinstance(n, LeafScan)]
    exchanges = [n for n in _walk(node) if isinstance(n, Exchange)]
    return len(leaves) == 1 and leaves[0].table.is_dim_table and not exchanges


def _broadcast(node: Node, hints: dict[str, str]) -> Node:
    """``node`` on every worker of the join: a scan of a dimension table (on every server)
    is read where the join runs, anything else is broadcast (or as the hint says)."""
    if _dim_scan(node) and not _distribution_hinted(hints):
        return node
    return Exchange(node.fields, node, "broadcast")


def _distribution_hinted(hints: dict[str, str]) -> bool:
    return bool(hints.get("left_distribution_type") or hints.get("right_distribution_type"))


def _walk(node: Node):
    yield node
    for c in node.inputs:
        yield from _walk(c)


def _hash(node: Node, keys: list[str]) -> Exchange:
    return Exchange(node.fields, node, "hash", list(keys))


def _hash_all(node: Node) -> Exchange:
    return Exchange(node.fields, node, "hash", [f.id for f in node.fields])


def _singleton(node: Node) -> Node:
    if _is_singleton(node):
        return node
    return Exchange(node.fields, node, "singleton")


def _is_singleton(node: Node) -> bool:
    """Whether ``node``'s rows are all on one worker already (above a singleton exchange
    with nothing partitioned below it in the same stage)."""
    if isinstance(node, Exchange):
        return node.distribution == "singleton"
    if isinstance(node, Values):
        return True
    if isinstance(node, LeafScan):
        return False
    return bool(node.inputs) and all(_is_singleton(c) for c in node.inputs)


__all__ = ["PhysicalPlanner", "Stage", "Unnest", "column_ids", "split_aggregate"]
