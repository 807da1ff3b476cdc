"""Subqueries in a block's expressions -> joins.

* ``x [NOT] IN (SELECT y ...)`` and ``[NOT] EXISTS (...)`` as a WHERE conjunct: a semi or anti
  join; ``NOT IN`` keeps three-valued logic (a NULL on either side rejects the row).
* A correlated one (its WHERE reads the outer query) is decorrelated when the subquery is a
  plain filter (no aggregation, LIMIT or window): its conditions on the outer query become
  the join's condition.
* A scalar subquery ``(SELECT agg ...)``: uncorrelated, a left join with its one row (more
  than one row is an error at run time); correlated by equalities only, the aggregation
  grouped by the inner side of those equalities and left-joined on them (``COUNT`` of no
  rows is 0, not NULL, also inside an expression: ``COUNT(*) + 1`` is 1).
* ``JOIN LATERAL (...)``: a plain filter joins on its conditions on the outer row; an
  aggregation without GROUP BY is planned as a correlated scalar subquery with many columns.
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.clauses import and_all, conjuncts
from engine.multistage.logical import (
    Aggregate,
    Exchange,
    Field,
    Filter,
    Join,
    Node,
    Project,
    ref,
)
from engine.multistage.scope import CorrelationError, Scope, bind_columns, column_ids
from engine.query.errors import QueryValidationError


class SubqueryPlanner:
    def __init__(self, planner, ctes, hints) -> None:
        self.p = planner
        self.ctes = ctes
        self.hints = hints
        self.node: Node | None = None

    # --- WHERE conjuncts ---------------------------------------------------------------------
    def conjunct(self, node: Node, scope: Scope, conjunct: exp.Expression):
        """(node, the conjunct left to filter on, or None when it became a join)."""
        negated = False
        inner = conjunct
        while isinstance(inner, exp.Not):
            negated, inner = not negated, inner.this
        inner = inner.this if isinstance(inner, exp.Paren) else inner
        if isinstance(inner, exp.Exists):
            return self._exists(node, scope, inner.this, negated), None
        if isinstance(inner, exp.In) and inner.args.get("query") is not None:
            return self._in(node, scope, inner, negated), None
        return node, conjunct

    def _plan_correlated(self, query: exp.Expression, scope: Scope):
        correlated: list[exp.Expression] = []
        sub, fields = self.p.query(query, scope, self.ctes, correlated)
        return sub, fields, correlated

    def _exists(self, node: Node, scope: Scope, query, negated: bool) -> Node:
        sub, _, correlated = self._plan_correlated(_unwrap(query), scope)
        sub = self._expose(sub, correlated)

        condition = and_all(correlated) or exp.true()
        return self._join(node, sub, "anti" if negated else "semi", condition)

    def _in(self, node: Node, scope: Scope, predicate: exp.In, negated: bool) -> Node:
        left = predicate.this
        sub, fields, correlated = self._plan_correlated(_unwrap(predicate.args["query"]), scope)
        lefts = list(left.expressions) if isinstance(left, exp.Tuple) else [left]
        if len(fields) != len(lefts):
            raise QueryValidationError(
                f"IN subquery returns {len(fields)} columns, {len(lefts)} expected"
            )
        sub = self._expose(sub, correlated)
        bound = [bind_columns(e, scope) for e in lefts]
        pairs = [exp.EQ(this=b, expression=ref(f)) for b, f in zip(bound, fields, strict=True)]

        condition = and_all(pairs + correlated)
        joined = self._join(node, sub, "anti" if negated else "semi", condition)
        if negated:
            joined.null_aware = True
        return joined

    def _expose(self, sub: Node, correlated: list[exp.Expression]) -> Node:
        """The subquery with the inner fields its pulled-up conditions read kept in its
        output (a projection may have dropped them)."""
        if not correlated:
            return sub
        wanted = set().union(*(column_ids(c) for c in correlated))
        available = {f.id: f for f in _all_fields(sub)}
        missing = [available[i] for i in sorted(wanted) if i in available and i not in
                   {f.id for f in sub.fields}]  # fmt: skip
        if not missing:
            return sub
        if not isinstance(sub, Project):
            raise QueryValidationError("Correlated subquery shape is not supported")
        fields = [*sub.fields, *missing]
        return Project(fields, sub.input, [*sub.exprs, *(ref(f) for f in missing)])

    def _join(self, node: Node, sub: Node, kind: str, condition) -> Join:
        join = Join(node.fields, node, sub, kind, condition)
        join.hints = dict(self.hints.get("joinOptions", {}))
        return join

    # --- scalar subqueries inside expressions ------------------------------------------------
    def bind(self, node: Node, scope: Scope, e: exp.Expression) -> exp.Expression:
        """``e`` with its columns bound; each scalar subquery planned as a join onto ``node``
        (the result node is ``self.node``)."""
        self.node = node
        subqueries = [s for s in e.find_all(exp.Subquery) if _outermost(s, e)]
        replacements = {}
        for subquery in subqueries:
            if (
                isinstance(subquery.parent, exp.In)
                and subquery.parent.args.get("query") is subquery
            ):
                raise QueryValidationError(
                    f"IN (subquery) is only supported as a WHERE condition: {e.sql()[:200]}"
                )
            replacements[id(subquery)] = self._scalar(scope, subquery)
        if any(isinstance(n, exp.Exists) for n in e.walk()):
            raise QueryValidationError(
                f"EXISTS is only supported as a WHERE condition: {e.sql()[:200]}"
            )

        def visit(n: exp.Expression) -> exp.Expression:
            if id(n) in replacements:
                return replacements[id(n)]
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return ref(scope.resolve(n))
            return n

        return _rewrite(e, visit)

    def _scalar(self, scope: Scope, subquery: exp.Subquery) -> exp.Expression:
        correlated: list[exp.Expression] = []
        try:
            sub, fields = self.p.query(subquery.this, scope, self.ctes, None)
            value = ref(fields[0]) if len(fields) == 1 else None
        except CorrelationError:
            sub, outputs, correlated = self._correlated_aggregate(scope, _unwrap(subquery))
            fields, value = outputs, outputs[0][1] if len(outputs) == 1 else None
        if value is None:
            raise QueryValidationError("Scalar subquery must return exactly one column")
        if correlated:
            join = Join([*self.node.fields, *sub.fields], self.node, sub, "left",
                        and_all(correlated))  # fmt: skip
        else:
            one = Exchange(sub.fields, sub, "broadcast", single_row=True)
            join = Join([*self.node.fields, *sub.fields], self.node, one, "left", None)
        join.hints = dict(self.hints.get("joinOptions", {}))
        self.node = join
        return value

    # --- JOIN LATERAL --------------------------------------------------------------------------
    def lateral(self, node: Node, scope: Scope, join: exp.Join, bind_on) -> Node:
        """``[LEFT | CROSS] JOIN LATERAL (subquery) alias [ON ...]`` and ``, LATERAL (...)``.
        A plain filter joins on its conditions on the outer row (LEFT keeps unmatched outer
        rows). An aggregation without GROUP BY has one row per outer row: it is grouped by
        the inner side of its equalities to the outer row and left-joined on them, as a
        correlated scalar subquery is."""
        lateral = join.this
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if side not in ("", "LEFT") or kind not in ("", "INNER", "CROSS"):
            raise QueryValidationError(
                f"{side or kind} JOIN LATERAL is not supported: use JOIN, LEFT JOIN or CROSS "
                "JOIN LATERAL"
            )
        alias_node = lateral.args.get("alias")
        alias = alias_node.name if alias_node is not None and alias_node.name else None
        names = [c.name for c in alias_node.columns] if alias_node is not None else []
        query, on = _unwrap(lateral.this), join.args.get("on")
        try:
            correlated: list[exp.Expression] = []
            sub, fields = self.p.query(query, scope, self.ctes, correlated)
        except CorrelationError:
            return self._lateral_aggregate(node, scope, query, alias, names, on, side, bind_on)
        sub = self._expose(sub, correlated)
        fields = _renamed(fields, names, alias)
        scope.relations.append((alias, fields))
        conditions = correlated + ([bind_on(on, scope)] if on is not None else [])
        jtype = "left" if side == "LEFT" else "inner" if conditions else "cross"
        joined = Join([*node.fields, *sub.fields], node, sub, jtype, and_all(conditions))
        joined.hints = dict(self.hints.get("joinOptions", {}))
        return joined

    def _lateral_aggregate(self, node, scope, query, alias, names, on, side, bind_on) -> Node:
        on_true = on is None or (isinstance(on, exp.Boolean) and on.this is True)
        if not on_true and side == "LEFT":
            raise QueryValidationError("LEFT JOIN LATERAL over an aggregation must be ON TRUE")
        sub, outputs, correlated = self._correlated_aggregate(scope, query)
        joined = Join([*node.fields, *sub.fields], node, sub, "left", and_all(correlated))
        joined.hints = dict(self.hints.get("joinOptions", {}))
        fields = _renamed([self.p.ids.new(name) for name, _ in outputs], names, alias)
        scope.relations.append((alias, fields))
        exprs = [ref(f) for f in node.fields] + [e for _, e in outputs]
        out: Node = Project([*node.fields, *fields], joined, exprs)
        # one row per outer row: an inner join's condition keeps or drops that row
        return out if on_true else Filter(out.fields, out, bind_on(on, scope))

    def _correlated_aggregate(self, scope: Scope, select: exp.Expression):
        """``SELECT f(agg(x), ...) ... FROM t WHERE t.k = outer.k AND ...`` (no GROUP BY: one
        row per outer row): (node grouped by ``t.k``, [(name, value over the join)], the join's
        conditions). A value is its expression over the grouped aggregations; a COUNT over no
        rows is 0 where the left join has NULL."""
        if not isinstance(select, exp.Select) or any(
            select.args.get(k) for k in ("group", "having", "distinct", "limit", "offset")
        ):
            raise QueryValidationError(
                "Correlated subquery is not supported: only a plain filter or an aggregation "
                "without GROUP BY, HAVING, DISTINCT or LIMIT may read the outer query"
            )
        pairs, inner_conds, outer_only = _split_correlation(select, scope)
        rewritten = select.copy()
        rewritten.set("where", exp.Where(this=and_all(inner_conds)) if inner_conds else None)
        items = [(_item_name(e, i), e.this if isinstance(e, exp.Alias) else e)
                 for i, e in enumerate(select.expressions)]  # fmt: skip
        calls = [c for _, value in items for c in _aggregate_calls(value)]
        keys = [inner.copy() for inner, _ in pairs]
        rewritten.set("expressions", [*keys, *(exp.alias_(c.copy(), f"a{i}")
                                               for i, c in enumerate(calls))])  # fmt: skip
        rewritten.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        sub, fields = self.p.query(rewritten, None, self.ctes, None)
        values = {id(c): f for c, f in zip(calls, fields[len(keys) :], strict=True)}

        def over_join(n: exp.Expression) -> exp.Expression:
            if id(n) not in values:
                if isinstance(n, exp.Column):
                    raise QueryValidationError(
                        f"Column '{n.sql()}' must be aggregated in a correlated subquery"
                    )
                return n
            out = ref(values[id(n)])
            if fn.zero_over_no_rows(n):
                return exp.Coalesce(this=out, expressions=[exp.Literal.number(0)])
            return out

        outputs = [(name, _rewrite(value, over_join)) for name, value in items]
        conditions = [
            exp.EQ(this=bind_columns(outer_expr, scope), expression=ref(f))
            for (_, outer_expr), f in zip(pairs, fields[: len(keys)], strict=True)
        ] + [bind_columns(c, scope) for c in outer_only]
        return sub, outputs, conditions


def _split_correlation(select: exp.Select, scope: Scope):
    """A correlated subquery's WHERE conjuncts: (inner = outer pairs, conditions on the inner
    rows, conditions on the outer row alone)."""
    where = select.args.get("where")
    outer_names = {f.name.lower() for f in scope.fields}
    inner_conds, pairs, outer_only = [], [], []
    for c in conjuncts(where.this if where is not None else None):
        columns = list(c.find_all(exp.Column))
        if columns and all(_is_outer(col, select, outer_names) for col in columns):
            # on the outer row alone: where it is not true the subquery sees no rows, as the
            # left join's condition says (no match: NULL, or 0 for a COUNT)
            outer_only.append(c)
        elif isinstance(c, exp.EQ) and _is_outer(c.expression, select, outer_names):
            pairs.append((c.this, c.expression))
        elif isinstance(c, exp.EQ) and _is_outer(c.this, select, outer_names):
            pairs.append((c.expression, c.this))
        else:
            inner_conds.append(c)
    if not pairs:
        raise QueryValidationError(
            "Correlated subquery is not supported: its WHERE must equate an inner column "
            "with an outer one"
        )
    return pairs, inner_conds, outer_only


def _aggregate_calls(e: exp.Expression) -> list[exp.Expression]:
    """The outermost aggregation calls in ``e``."""
    if isinstance(e, exp.Window | exp.Subquery):
        raise QueryValidationError(
            f"Correlated subquery is not supported with {e.key}: {e.sql()[:200]}"
        )
    if fn.is_aggregate_call(e):
        return [e]
    return [c for child in e.iter_expressions() for c in _aggregate_calls(child)]


def _item_name(e: exp.Expression, i: int) -> str:
    if isinstance(e, exp.Alias):
        return e.alias
    return e.name if isinstance(e, exp.Column) else f"EXPR${i}"


def _renamed(fields: list[Field], names: list[str], alias: str | None) -> list[Field]:
    """A LATERAL item's fields under its alias (and its column list, when given)."""
    if len(names) > len(fields):
        raise QueryValidationError(
            f"LATERAL alias lists {len(names)} columns, the subquery returns {len(fields)}"
        )
    names = names + [f.name for f in fields[len(names) :]]
    return [Field(f.id, name, alias) for f, name in zip(fields, names, strict=True)]


def _unwrap(query: exp.Expression) -> exp.Expression:
    return query.this if isinstance(query, exp.Subquery) and not query.alias else query


def _outermost(sub: exp.Expression, root: exp.Expression) -> bool:
    if sub is root:
        return True
    parent = sub.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Subquery | exp.Select):
            return False
        parent = parent.parent
    return True


def _is_outer(e: exp.Expression, select: exp.Select, outer_names: set[str]) -> bool:
    """Whether a column of the subquery's WHERE names the outer query (a qualifier that is
    not one of the subquery's FROM items)."""
    if not isinstance(e, exp.Column) or not e.table:
        return False
    inner = set()
    from_ = select.args.get("from_") or select.args.get("from")
    for item in [from_.this if from_ else None, *(j.this for j in select.args.get("joins") or [])]:
        if item is not None:
            inner.add(item.alias_or_name.lower())
    return e.table.lower() not in inner and e.name.lower() in outer_names


def _rewrite(e: exp.Expression, visit) -> exp.Expression:
    replaced = visit(e)
    if replaced is not e:
        return replaced
    copy = e.copy()
    for key, value in list(e.args.items()):
        if isinstance(value, exp.Expression):
            copy.set(key, _rewrite(value, visit))
        elif isinstance(value, list):
            copy.set(key, [_rewrite(v, visit) if isinstance(v, exp.Expression) else v
                           for v in value])  # fmt: skip
    return copy


def _all_fields(node: Node) -> list[Field]:
    out = list(node.fields)
    for child in node.inputs:
        out += _all_fields(child)
    return out


__all__ = ["Aggregate", "SubqueryPlanner"]
