"""Name resolution for the planner: which field a column reference names.

A scope lists the relations of one FROM clause (alias -> fields); a subquery's scope has its
enclosing query's scope as parent, and a reference resolved there is a correlation, recorded
so the planner can turn it into a join condition. Identifiers are case-insensitive, as in
Pinot (``enable.case.insensitive``).
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage.logical import Field, ref
from engine.query.errors import QueryValidationError, UnknownColumnError


class CorrelationError(QueryValidationError):
    """A subquery reads its enclosing query where that cannot be decorrelated."""


class Scope:
    def __init__(
        self, relations: list[tuple[str | None, list[Field]]], parent: Scope | None = None
    ):
        self.relations = relations
        self.parent = parent
        self.outer_refs: set[str] = set()  # ids of the parent's fields this scope read
        self.hidden: set[str] = set()  # field ids that SELECT * skips (USING duplicates)

    @property
    def fields(self) -> list[Field]:
        return [f for _, fields in self.relations for f in fields]

    def local_ids(self) -> set[str]:
        return {f.id for f in self.fields}

    def resolve(self, column: exp.Column) -> Field:
        field = self.lookup(column.name, column.table or None)
        if field is None:
            name = f"{column.table}.{column.name}" if column.table else column.name
            raise UnknownColumnError(name)
        return field

    def lookup(self, name: str, qualifier: str | None) -> Field | None:
        found = self._local(name, qualifier)
        if found is not None:
            return found
        if self.parent is not None:
            outer = self.parent.lookup(name, qualifier)
            if outer is not None:
                self.outer_refs.add(outer.id)
            return outer
        return None

    def _local(self, name: str, qualifier: str | None) -> Field | None:
        if name.startswith("$"):  # a field id (an expression already bound)
            for f in self.fields:
                if f.id == name:
                    return f
        lowered = name.lower()
        matches = []
        for alias, fields in self.relations:
            if qualifier is not None and (alias or "").lower() != qualifier.lower():
                continue
            matches += [f for f in fields if f.name.lower() == lowered]
        if not matches:
            return None
        exact = [f for f in matches if f.name == name]
        if len(matches) > 1 and qualifier is None:
            visible = [f for f in matches if f.id not in self.hidden]
            if len(visible) == 1:
                return visible[0]
            if len(exact) == 1:
                return exact[0]
            raise QueryValidationError(f"Column '{name}' is ambiguous")
        return exact[0] if exact else matches[0]

    def relation(self, qualifier: str) -> list[Field]:
        for alias, fields in self.relations:
            if (alias or "").lower() == qualifier.lower():
                return fields
        raise QueryValidationError(f"Table '{qualifier}' not found")


def bind_columns(node: exp.Expression, scope: Scope) -> exp.Expression:
    """A copy of ``node`` whose column references name field ids. Subqueries must have been
    replaced before (the planner does it)."""

    def visit(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
            return ref(scope.resolve(e))
        return e

    return node.copy().transform(visit, copy=False)


def column_ids(node: exp.Expression) -> set[str]:
    """The field ids a bound expression reads."""
    return {c.name for c in node.find_all(exp.Column)}


def rewrite(e: exp.Expression, visit) -> exp.Expression:
    """Bottom-up rewrite of a copy of ``e``: children first, then ``visit`` of the node (which
    returns it or a replacement)."""
    copy = e.copy()
    for key, value in list(copy.args.items()):
        if isinstance(value, exp.Expression):
            copy.set(key, rewrite(value, visit))
        elif isinstance(value, list):
            copy.set(key, [rewrite(v, visit) if isinstance(v, exp.Expression) else v
                           for v in value])  # fmt: skip
    return visit(copy)
