"""Subqueries in a block's expressions -> joins.

* ``x [NOT] IN (SELECT y ...)`` and ``[NOT] EXISTS (...)`` as a WHERE conjunct: a semi or anti
  join; ``NOT IN`` keeps three-valued logic (a NULL on either side rejects the row).
* A correlated one (its WHERE reads the outer query) is decorrelated when the subquery is a
  plain filter (no aggregation, LIMIT or window): its conditions on the outer query become
  the join's condition.
* A scalar subquery ``(SELECT agg ...)``: uncorrelated, a left join with its one row (more
  than one row is an error at run time); correlated by equalities only, the aggregation
  grouped by the inner side of those equalities and left-joined on them (``COUNT`` of no
  rows is 0, not NULL).
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.clauses import and_all, conjuncts
from engine.multistage.logical import Aggregate, Exchange, Field, Join, Node, Project, ref
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
        count = False
        try:
            sub, fields = self.p.query(subquery.this, scope, self.ctes, None)
        except CorrelationError:
            sub, fields, correlated, count = self._correlated_scalar(scope, subquery)
        if len(fields) != 1:
            raise QueryValidationError("Scalar subquery must return exactly one column")

        if correlated:
            join = Join([*self.node.fields, *sub.fields], self.node, sub, "left",
                        and_all(correlated))  # fmt: skip
        else:
            one = Exchange(sub.fields, sub, "broadcast", single_row=True)
            join = Join([*self.node.fields, *sub.fields], self.node, one, "left", None)
        join.hints = dict(self.hints.get("joinOptions", {}))
        self.node = join
        if count:  # COUNT over no rows is 0, where the left join has NULL
            return exp.Coalesce(this=ref(fields[0]), expressions=[exp.Literal.number(0)])
        return ref(fields[0])

    def _correlated_scalar(self, scope: Scope, subquery: exp.Subquery):
        """``(SELECT agg(x) FROM t WHERE t.k = outer.k AND ...)``: aggregated per ``t.k`` and
        joined on ``t.k = outer.k``."""
        select = subquery.this
        if (
            not isinstance(select, exp.Select)
            or select.args.get("group")
            or len(select.expressions) != 1
        ):
            raise QueryValidationError("Correlated scalar subquery is not supported")
        where = select.args.get("where")

        outer_names = {f.name.lower() for f in scope.fields}
        inner_conds, pairs, outer_only = [], [], []
        for c in conjuncts(where.this if where is not None else None):
            columns = list(c.find_all(exp.Column))
            if columns and all(_is_outer(col, select, outer_names) for col in columns):
                # on the outer row alone: where it is not true the subquery sees no rows,
                # as the left join's condition says (no match: NULL, or 0 for a COUNT)
                outer_only.append(c)
            elif isinstance(c, exp.EQ) and _is_outer(c.expression, select, outer_names):
                pairs.append((c.this, c.expression))
            elif isinstance(c, exp.EQ) and _is_outer(c.this, select, outer_names):
                pairs.append((c.expression, c.this))
            else:
                inner_conds.append(c)
        if not pairs:
            raise QueryValidationError("Correlated scalar subquery is not supported")
        rewritten = select.copy()
        rewritten.set("where", exp.Where(this=and_all(inner_conds)) if inner_conds else None)
        value = rewritten.expressions[0]
        value = value.this if isinstance(value, exp.Alias) else value
        keys = [inner.copy() for inner, _ in pairs]
        rewritten.set("expressions", [*keys, exp.alias_(value.copy(), "v")])
        rewritten.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        sub, fields = self.p.query(rewritten, None, self.ctes, None)
        value_field = fields[-1]
        count = any(fn.call_name(n) in ("count", "distinctcount") for n in value.walk())
        conditions = [
            exp.EQ(this=bind_columns(outer_expr, scope), expression=ref(f))
            for (_, outer_expr), f in zip(pairs, fields[:-1], strict=True)
        ] + [bind_columns(c, scope) for c in outer_only]
        return sub, [value_field], conditions, count


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
