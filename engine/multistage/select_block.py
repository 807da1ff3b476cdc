"""One SELECT block -> logical nodes (see ``engine.multistage.planner``)."""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.aggregation import plan_aggregate
from engine.multistage.clauses import and_all, conjuncts, filter_node, limit_offset, sort_key
from engine.multistage.logical import Aggregate, Field, Filter, Node, Project, Sort, Values, ref
from engine.multistage.scope import CorrelationError, Scope, column_ids
from engine.multistage.subqueries import SubqueryPlanner
from engine.multistage.windows import plan_windows
from engine.query.errors import QueryValidationError


class SelectPlanner:
    def __init__(self, planner, select: exp.Select, outer, ctes, correlated) -> None:
        self.p = planner
        self.select = select
        self.outer = outer
        self.ctes = ctes
        self.correlated = correlated
        self.hints = planner.hints(select)
        self.subqueries = SubqueryPlanner(planner, ctes, self.hints)

    def plan(self) -> tuple[Node, list[Field]]:
        node, scope = self._from()
        where = self.select.args.get("where")
        if where is not None:
            node = self._where(node, scope, where.this)
        items = self._select_items(scope)
        group = self.select.args.get("group")
        having = self.select.args.get("having")
        order = self.select.args.get("order")
        order_items = list(order.expressions) if order is not None else []
        exprs = [e for e, _ in items] + [o.this for o in order_items]
        exprs += [having.this] if having is not None else []
        aggregated = (
            group is not None or having is not None or any(_has_aggregate(e) for e in exprs)
        )
        if aggregated:
            node, bind = plan_aggregate(self, node, scope, items, group, order_items)
            if having is not None:
                node = Filter(node.fields, node, bind(having.this))
        else:
            if having is not None:
                raise QueryValidationError("HAVING needs GROUP BY or an aggregation")

            def bind(e: exp.Expression) -> exp.Expression:
                nonlocal node
                bound = self.subqueries.bind(node, scope, e)
                node = self.subqueries.node
                return bound

        node, bind = plan_windows(self, node, items, order_items, bind)
        bound_items = [bind(e) for e, _ in items]
        names = [name for _, name in items]
        fields = [self.p.ids.new(n) for n in names]
        keys, hidden = [], []
        distinct = self.select.args.get("distinct") is not None
        for item in order_items:
            expr = self._order_target(item.this, fields, items)
            if expr is None:
                bound = bind(item.this)
                if bound in bound_items:
                    expr = ref(fields[bound_items.index(bound)])
                elif distinct:
                    raise QueryValidationError(
                        "ORDER BY expression must be in the SELECT list of a SELECT DISTINCT"
                    )
                else:
                    extra = self.p.ids.new(f"$order{len(hidden)}")
                    hidden.append((extra, bound))
                    expr = ref(extra)
            keys.append(sort_key(item, expr))
        all_fields = fields + [f for f, _ in hidden]
        node = Project(all_fields, node, bound_items + [e for _, e in hidden])
        if distinct:
            node = Aggregate(fields, node, [ref(f) for f in fields], [],
                             hints=self.hints.get("aggOptions", {}))  # fmt: skip
        limit, offset = limit_offset(self.select)
        if keys or limit is not None or offset:
            node = Sort(node.fields, node, keys, limit, offset)
        if hidden:
            node = Project(fields, node, [ref(f) for f in fields])
        self._check_correlation(scope, aggregated or limit is not None or distinct)
        return node, fields

    def _check_correlation(self, scope: Scope, reshaped: bool) -> None:
        """Outer columns may be read only by WHERE conditions pulled into the join (and only
        when the block is a plain filter, whose rows those conditions pick)."""
        pulled = set().union(*(column_ids(c) for c in self.correlated or []))
        if scope.outer_refs - pulled or (pulled and reshaped):
            raise CorrelationError("Correlated subquery is not supported in this form")

    def _order_target(self, target, fields, items) -> exp.Expression | None:
        """A SELECT position or alias named by an ORDER BY item, else None."""
        if isinstance(target, exp.Literal) and not target.is_string:
            position = int(target.this)
            if not 1 <= position <= len(fields):
                raise QueryValidationError(
                    f"ORDER BY position {position} is not in the SELECT list (1 to {len(fields)})"
                )
            return ref(fields[position - 1])
        if isinstance(target, exp.Column) and not target.table:
            lowered = target.name.lower()
            for i, (expr, name) in enumerate(items):
                aliased = not (isinstance(expr, exp.Column) and expr.name.lower() == lowered)
                if name.lower() == lowered and aliased:
                    return ref(fields[i])
        return None

    # --- FROM and WHERE ----------------------------------------------------------------------
    def _from(self) -> tuple[Node, Scope]:
        from_ = self.select.args.get("from_") or self.select.args.get("from")
        if from_ is None:  # SELECT 1: one row of nothing
            return Values([], [[]]), Scope([], self.outer)
        node, alias, fields = self.p.relation(from_.this, self.outer, self.ctes)
        scope = Scope([(alias, fields)], self.outer)
        join_hints = self.hints.get("joinOptions", {})
        for join in self.select.args.get("joins") or []:
            item = join.this
            if isinstance(item, exp.Unnest):
                node, alias, fields = self.p.unnest(node, scope, item)
                scope.relations.append((alias, fields))
                continue
            if isinstance(item, exp.Lateral):
                node = self.subqueries.lateral(node, scope, join, self._bind_on)
                continue
            right, alias, fields = self.p.relation(item, scope, self.ctes)
            scope.relations.append((alias, fields))
            node = self.p.join(node, right, join, scope, self._bind_on)
            node.hints = dict(join_hints)
            if node.kind in ("semi", "anti"):
                scope.relations.pop()
        return node, scope

    def _bind_on(self, e: exp.Expression, scope: Scope) -> exp.Expression:
        if any(isinstance(n, exp.Subquery | exp.Exists) for n in e.walk()):
            raise QueryValidationError(f"Subquery in a join condition: {e.sql()[:200]}")
        from engine.multistage.scope import bind_columns

        return bind_columns(e, scope)

    def _where(self, node: Node, scope: Scope, condition: exp.Expression) -> Node:

        kept = []
        for conjunct in conjuncts(condition):
            node, residual = self.subqueries.conjunct(node, scope, conjunct)
            if residual is None:
                continue
            bound = self.subqueries.bind(node, scope, residual)
            node = self.subqueries.node
            if self.correlated is not None and column_ids(bound) - _ids(node):
                self.correlated.append(bound)  # a condition on the outer query: the join's
                continue
            kept.append(bound)
        return filter_node(node, and_all(kept))

    # --- SELECT list -------------------------------------------------------------------------
    def _select_items(self, scope: Scope) -> list[tuple[exp.Expression, str]]:
        """(unbound expression, output name) per item, stars expanded to field refs."""
        items = []
        for i, node in enumerate(self.select.expressions):
            if isinstance(node, exp.Star) or (
                isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
            ):
                table = node.table if isinstance(node, exp.Column) else None
                fields = scope.relation(table) if table else scope.fields
                items += [(ref(f), f.name) for f in fields if table or f.id not in scope.hidden]
                continue
            if isinstance(node, exp.Alias):
                items.append((node.this, node.alias))
            elif isinstance(node, exp.Column):
                items.append((node, node.name))
            else:
                items.append((node, f"EXPR${i}"))
        return items


def _has_aggregate(e: exp.Expression) -> bool:
    """Whether ``e`` aggregates rows of this block (not inside a subquery; the argument of a
    window function may)."""
    if isinstance(e, exp.Subquery | exp.Exists):
        return False
    if isinstance(e, exp.Window):
        call = e.this.this if isinstance(e.this, exp.Filter) else e.this
        parts = [*fn.aggregate_args(call), *(e.args.get("partition_by") or [])]
        order = e.args.get("order")
        parts += [o.this for o in order.expressions] if order is not None else []
        return any(_has_aggregate(p) for p in parts)
    if fn.is_aggregate_call(e):
        return True
    return any(_has_aggregate(child) for child in e.iter_expressions())


def _ids(node: Node) -> set[str]:
    return {f.id for f in node.fields}
