"""sqlglot tree -> logical plan (``engine.multistage.logical``).

One query block at a time, in SQL's order: FROM and its joins, WHERE (``IN``/``EXISTS``
subqueries become semi and anti joins, scalar subqueries joins with a one-row side), GROUP BY
and the aggregations, HAVING, the window functions, SELECT, DISTINCT, ORDER BY with LIMIT
and OFFSET. Set operations, CTEs (planned afresh at each use) and ``VALUES`` compose blocks.
Correlated ``IN``/``EXISTS`` subqueries are decorrelated: their conditions on the outer
query become the join's condition, as Pinot's ``PinotRelDecorrelator`` does.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.clauses import and_all, conjuncts, limit_offset, sort_key
from engine.multistage.errors import InternalPlanError
from engine.multistage.logical import (
    Field,
    FieldIds,
    Join,
    Node,
    Project,
    Scan,
    SetOp,
    Sort,
    TableInfo,
    Unnest,
    Values,
    ref,
)
from engine.multistage.scope import Scope, bind_columns, column_ids
from engine.multistage.select_block import SelectPlanner
from engine.multistage.sql import hints_of, table_hints
from engine.query.errors import QueryValidationError, TableNotFoundError
from engine.spi.partition import canonical_name

Catalog = Callable[[str], TableInfo | None]


class Planner:
    """Plans one query against ``catalog`` (raw table name -> TableInfo)."""

    def __init__(self, catalog: Catalog, options: dict[str, str] | None = None) -> None:
        self.catalog = catalog
        self.ids = FieldIds()
        self.options = options or {}
        self.tables: list[str] = []

    def plan(self, tree: exp.Expression) -> Node:
        node, _ = self.query(tree, None, {})
        return node

    # --- query expressions -----------------------------------------------------------------
    def query(
        self,
        tree: exp.Expression,
        outer: Scope | None,
        ctes: dict[str, exp.Expression],
        correlated: list | None = None,
    ) -> tuple[Node, list[Field]]:
        """(node, output fields) of a SELECT, set operation or VALUES. ``correlated``
        collects conditions on ``outer`` that a simple subquery's WHERE holds (None: a
        correlation is an error)."""
        ctes = self._with(tree, ctes)
        if isinstance(tree, exp.Subquery):
            return self.query(tree.this, outer, ctes, correlated)
        if isinstance(tree, exp.SetOperation):
            return self._set_operation(tree, outer, ctes)
        if isinstance(tree, exp.Values):
            return self._values(tree)
        if isinstance(tree, exp.Select):
            return SelectPlanner(self, tree, outer, ctes, correlated).plan()
        raise QueryValidationError(f"Unsupported query: {tree.sql()[:200]}")

    def _with(self, tree: exp.Expression, ctes: dict) -> dict:
        with_ = tree.args.get("with_") or tree.args.get("with")
        if with_ is None:
            return ctes
        if with_.args.get("recursive"):
            raise QueryValidationError("WITH RECURSIVE is not supported")
        ctes = dict(ctes)
        for cte in with_.expressions:
            if cte.args.get("materialized") is not None:
                raise QueryValidationError("[NOT] MATERIALIZED is not supported")
            ctes[cte.alias_or_name.lower()] = (cte, dict(ctes))
        return ctes

    def _set_operation(self, tree: exp.SetOperation, outer, ctes) -> tuple[Node, list[Field]]:
        left, left_fields = self.query(tree.this, outer, ctes)
        right, right_fields = self.query(tree.expression, outer, ctes)
        if len(left_fields) != len(right_fields):
            raise QueryValidationError(
                f"Set operator cannot combine {len(left_fields)} and {len(right_fields)} columns"
            )
        kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(tree)]
        fields = [self.ids.new(f.name) for f in left_fields]
        distinct = tree.args.get("distinct")
        node: Node = SetOp(fields, kind, distinct is False, left, right)
        return self._order_limit(tree, node, fields)

    def _order_limit(self, tree, node: Node, fields: list[Field]) -> tuple[Node, list[Field]]:
        """ORDER BY / LIMIT written after a set operation: over its output columns."""
        order = tree.args.get("order")
        limit, offset = limit_offset(tree)
        if order is None and limit is None and not offset:
            return node, fields
        scope = Scope([(None, fields)])
        keys = []
        for item in order.expressions if order is not None else []:
            target = item.this
            if isinstance(target, exp.Literal) and not target.is_string:
                position = int(target.this)
                if not 1 <= position <= len(fields):
                    raise QueryValidationError(f"ORDER BY position {position} is out of range")
                expr = ref(fields[position - 1])
            else:
                expr = bind_columns(target, scope)
            keys.append(sort_key(item, expr))
        return Sort(fields, node, keys, limit, offset), fields

    def _values(self, tree: exp.Values) -> tuple[Node, list[Field]]:
        rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t] for t in tree.expressions]
        width = len(rows[0]) if rows else 0
        if any(len(r) != width for r in rows):
            raise QueryValidationError("VALUES rows must have the same number of columns")
        alias = tree.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        names += [f"EXPR${i}" for i in range(len(names), width)]
        fields = [self.ids.new(n, alias.name if alias is not None else None) for n in names]
        return Values(fields, rows), fields

    # --- FROM items --------------------------------------------------------------------------
    def relation(self, item: exp.Expression, outer, ctes) -> tuple[Node, str | None, list[Field]]:
        """(node, alias, fields) of one FROM item."""
        alias = item.alias_or_name if not isinstance(item, exp.Values) else None
        if isinstance(item, exp.Table):
            name = item.name
            cte = ctes.get(name.lower()) if not item.args.get("db") else None
            if cte is not None:
                definition, visible = cte
                node, fields = self.query(definition.this, None, visible)
                qualifier = item.alias or name
                renamed = [self.ids.new(n, qualifier) for n in _cte_names(definition, fields)]
                project = Project(renamed, node, [ref(f) for f in fields])
                return project, qualifier, renamed
            return self._scan(item, outer)
        if isinstance(item, exp.Subquery):
            node, fields = self.query(item.this, outer, ctes)
            alias_node = item.args.get("alias")
            if alias_node is not None and alias_node.columns:
                names = [c.name for c in alias_node.columns]
                renamed = [self.ids.new(n, alias) for n in names]
                return Project(renamed, node, [ref(f) for f in fields]), alias, renamed
            fields = [Field(f.id, f.name, alias) for f in fields]
            return node, alias or None, fields
        if isinstance(item, exp.Values):
            node, fields = self._values(item)
            alias_node = item.args.get("alias")
            return node, alias_node.name if alias_node is not None else None, fields
        if isinstance(item, exp.Lateral):
            raise QueryValidationError("LATERAL is only supported as JOIN LATERAL (...) ON TRUE")
        raise QueryValidationError(f"Unsupported FROM item: {item.sql()[:200]}")

    def _scan(self, item: exp.Table, outer) -> tuple[Node, str | None, list[Field]]:
        name = item.name
        table = self.catalog(name)
        if table is None:
            raise TableNotFoundError(f"TableDoesNotExistError: table '{name}' does not exist")
        self.tables.append(table.name)
        qualifier = item.alias or name
        columns = list(table.columns)
        fields = [self.ids.new(c, qualifier) for c in columns]
        hints = table_hints(item)
        _check_partition_hint(table, hints)
        return Scan(fields, table, columns, hints), qualifier, fields

    def unnest(self, node: Node, scope: Scope, item: exp.Unnest) -> tuple[Node, str, list[Field]]:
        arrays = [bind_columns(e, scope) for e in item.expressions]
        alias = item.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        names += [f"EXPR${i}" for i in range(len(names), len(arrays))]
        qualifier = alias.name if alias is not None and alias.name else "unnest"
        fields = [self.ids.new(n, qualifier) for n in names]
        return Unnest([*node.fields, *fields], node, arrays), qualifier, fields

    def join(self, left: Node, right: Node, join: exp.Join, scope: Scope, bind) -> Join:
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        method = (join.args.get("method") or "").upper()
        if method == "ASOF":
            return self._asof(left, right, join, scope, side)
        if kind == "SEMI":
            jtype = "semi"
        elif kind == "ANTI":
            jtype = "anti"
        elif side in ("LEFT", "RIGHT", "FULL"):
            jtype = side.lower()
        elif kind == "CROSS":
            jtype = "cross"
        else:
            jtype = "inner"
        on = join.args.get("on")
        using = join.args.get("using")
        condition = None
        if method == "NATURAL":
            left_names = {f.name.lower(): f for f in left.fields}
            pairs = [(left_names[f.name.lower()], f) for f in right.fields
                     if f.name.lower() in left_names]  # fmt: skip
            condition = and_all([exp.EQ(this=ref(a), expression=ref(b)) for a, b in pairs])
            scope.hidden.update(b.id for _, b in pairs)
        elif using:
            conds = []
            for ident in using:
                a = _find(left.fields, ident.name)
                b = _find(right.fields, ident.name)
                conds.append(exp.EQ(this=ref(a), expression=ref(b)))
                scope.hidden.add(b.id)
            condition = and_all(conds)
        elif on is not None:
            condition = bind(on, scope)
        if condition is None and jtype == "inner":
            jtype = "cross"
        fields = left.fields if jtype in ("semi", "anti") else [*left.fields, *right.fields]
        return Join(fields, left, right, jtype, condition)

    def _asof(self, left, right, join: exp.Join, scope: Scope, side: str) -> Join:
        match = join.args["match_condition"]
        bound = bind_columns(match, scope)
        left_ids, right_ids = {f.id for f in left.fields}, {f.id for f in right.fields}
        ok = isinstance(bound, exp.GT | exp.GTE | exp.LT | exp.LTE) and all(
            isinstance(side_expr, exp.Column) for side_expr in (bound.this, bound.expression)
        )
        sides = {bound.this.name, bound.expression.name} if ok else set()
        if not ok or not (sides & left_ids and sides & right_ids):
            raise QueryValidationError(
                "ASOF JOIN MATCH_CONDITION must be a comparison between columns from the two inputs"
            )
        on = bind_columns(join.args["on"], scope)
        for conjunct in conjuncts(on):
            if isinstance(conjunct, exp.Boolean) and conjunct.this:
                continue
            if not isinstance(conjunct, exp.EQ):
                raise QueryValidationError(
                    "ASOF JOIN condition must be a conjunction of equality comparisons"
                )
        kind = "left_asof" if side == "LEFT" else "asof"
        return Join([*left.fields, *right.fields], left, right, kind, on, bound)

    def hints(self, select: exp.Select) -> dict[str, dict[str, str]]:
        return hints_of(select)


def _check_partition_hint(table: TableInfo, hints: dict[str, str]) -> None:
    """``tableOptions(partition_key, partition_function, partition_size)`` must describe the
    table's partitioning: a wrong one would colocate rows that are not (Pinot refuses it)."""
    key = hints.get("partition_key")
    if key is None:
        return
    function = hints.get("partition_function", table.partition_function or "")
    size = hints.get("partition_size", str(table.num_partitions))
    same = (
        table.partition_column is not None and key.lower() == table.partition_column.lower()
        and canonical_name(function) == canonical_name(table.partition_function or "")
        and size.isdigit() and int(size) == table.num_partitions
    )  # fmt: skip
    if not same:
        raise InternalPlanError(
            f"Error composing query plan for '{table.name}': tableOptions(partition_key='{key}', "
            f"partition_function='{function}', partition_size='{size}') does not match the "
            f"table's partitioning ({table.partition_column}, {table.partition_function}, "
            f"{table.num_partitions})"
        )


def _cte_names(definition: exp.CTE, fields: list[Field]) -> list[str]:
    alias = definition.args.get("alias")
    if alias is not None and alias.columns:
        return [c.name for c in alias.columns]
    return [f.name for f in fields]


def _find(fields: list[Field], name: str) -> Field:
    for f in fields:
        if f.name.lower() == name.lower():
            return f
    raise QueryValidationError(f"Column '{name}' in USING is not in both inputs")


__all__ = ["Planner", "column_ids", "fn"]
