"""GROUP BY and aggregations of one block -> an ``Aggregate`` node, and the binder of the
expressions above it (HAVING, SELECT, ORDER BY), which may read only the group keys and the
aggregations (Calcite's "Expression 'x' is not being grouped")."""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.logical import Aggregate, ref
from engine.multistage.scope import Scope, bind_columns
from engine.query.errors import QueryValidationError


def plan_aggregate(sp, node, scope: Scope, items, group, order_items):
    ids = sp.p.ids
    keys, sets = _group_keys(group, items, scope)
    calls: list[exp.Expression] = []
    exprs = [e for e, _ in items] + [o.this for o in order_items]
    having = sp.select.args.get("having")
    if having is not None:
        exprs.append(having.this)
    for e in exprs:
        _collect(e, calls)
    aggs: list[exp.Expression] = []
    for call in calls:
        bound = _bind_call(call, scope)
        if bound not in aggs:
            aggs.append(bound)
    key_fields = [ids.new(_name(k)) for k in keys]
    agg_fields = [ids.new(f"$f{i}") for i in range(len(aggs))]
    aggregate = Aggregate([*key_fields, *agg_fields], node, keys, aggs, "direct", sets,
                          dict(sp.hints.get("aggOptions", {})))  # fmt: skip

    def bind(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.Window):
            return _rebuild(e, bind)
        if fn.is_aggregate_call(e):
            bound = _bind_call(e, scope)
            return ref(agg_fields[aggs.index(bound)])
        if isinstance(e, exp.Subquery | exp.Exists):
            raise QueryValidationError(
                f"Subquery over an aggregated query is not supported: {e.sql()[:200]}"
            )
        if not list(e.find_all(exp.Column)) and not any(fn.is_aggregate_call(n) for n in e.walk()):
            return e.copy()
        try:
            bound = bind_columns(e, scope)
        except QueryValidationError:
            bound = None
        if bound is not None and bound in keys:
            return ref(key_fields[keys.index(bound)])
        if isinstance(e, exp.Column):
            alias = _alias_key(e, items, keys, key_fields, scope)
            if alias is not None:
                return alias
            raise QueryValidationError(f"Expression '{e.sql()}' is not being grouped")
        return _rebuild(e, bind)

    return aggregate, bind


def _group_keys(group, items, scope: Scope):
    """(distinct bound key expressions, grouping sets as key positions or None)."""
    if group is None:
        return [], None
    keys: list[exp.Expression] = []

    def key_of(e: exp.Expression) -> int:
        bound = _resolve_key(e, items, scope)
        if bound not in keys:
            keys.append(bound)
        return keys.index(bound)

    plain = [key_of(e) for e in group.expressions]
    sets: list[list[int]] | None = None
    for grouping in group.args.get("grouping_sets") or []:
        sets = sets or []
        for s in grouping.expressions if isinstance(grouping, exp.GroupingSets) else [grouping]:
            members = s.expressions if isinstance(s, exp.Tuple) else [s]
            sets.append(plain + [key_of(m) for m in members if not isinstance(m, exp.Null)])
    for rollup in group.args.get("rollup") or []:
        cols = [key_of(m) for m in rollup.expressions]
        sets = (sets or []) + [plain + cols[:i] for i in range(len(cols), -1, -1)]
    for cube in group.args.get("cube") or []:
        cols = [key_of(m) for m in cube.expressions]
        subsets = [
            [c for j, c in enumerate(cols) if mask >> j & 1] for mask in range(1 << len(cols))
        ]
        sets = (sets or []) + [plain + s for s in sorted(subsets, key=len, reverse=True)]
    return keys, sets


def _resolve_key(e: exp.Expression, items, scope: Scope) -> exp.Expression:
    if isinstance(e, exp.Literal) and not e.is_string:
        position = int(e.this)
        if not 1 <= position <= len(items):
            raise QueryValidationError(
                f"GROUP BY position {position} is not in the SELECT list (1 to {len(items)})"
            )
        return bind_columns(items[position - 1][0], scope)
    if isinstance(e, exp.Column) and not e.table and scope.lookup(e.name, None) is None:
        for expr, name in items:
            if name.lower() == e.name.lower():
                return bind_columns(expr, scope)
    return bind_columns(e, scope)


def _alias_key(e: exp.Column, items, keys, key_fields, scope):
    """A SELECT alias named in ORDER BY/HAVING that is a group key."""
    if e.table:
        return None
    for expr, name in items:
        if name.lower() == e.name.lower() and not (
            isinstance(expr, exp.Column) and expr.name.lower() == e.name.lower()
        ):
            try:
                bound = bind_columns(expr, scope)
            except QueryValidationError:
                return None
            if bound in keys:
                return ref(key_fields[keys.index(bound)])
    return None


def _collect(e: exp.Expression, out: list) -> None:
    if isinstance(e, exp.Subquery | exp.Exists):
        return
    if isinstance(e, exp.Window):
        call = e.this
        inner = call.this if isinstance(call, exp.Filter) else call
        for arg in fn.aggregate_args(inner):
            _collect(arg, out)
        for part in e.args.get("partition_by") or []:
            _collect(part, out)
        order = e.args.get("order")
        for o in order.expressions if order is not None else []:
            _collect(o.this, out)
        return
    if fn.is_aggregate_call(e):
        for arg in fn.aggregate_args(e):
            if any(fn.is_aggregate_call(n) for n in arg.walk()):
                raise QueryValidationError(f"Aggregate expressions cannot be nested: {e.sql()}")
        out.append(e)
        return
    for child in e.iter_expressions():
        _collect(child, out)


def _bind_call(call: exp.Expression, scope: Scope) -> exp.Expression:
    return bind_columns(call, scope)


def _rebuild(e: exp.Expression, bind) -> exp.Expression:
    copy = e.copy()
    for key, value in list(e.args.items()):
        if isinstance(value, exp.Expression):
            copy.set(key, bind(value))
        elif isinstance(value, list):
            copy.set(key, [bind(v) if isinstance(v, exp.Expression) else v for v in value])
    return copy


def _name(key: exp.Expression) -> str:
    return key.name if isinstance(key, exp.Column) else "$key"
