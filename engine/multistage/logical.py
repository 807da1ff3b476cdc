"""The logical plan: relational nodes over named fields, and the catalog they read.

Every node's output is a list of ``Field``s with query-unique ids (``$3``), so expressions
(sqlglot trees whose columns name field ids) stay unambiguous across joins and stages.
Exchanges (``Exchange``) are added by ``engine.multistage.stages`` where data must move
between workers; ``LeafScan`` is a table scan with the filter the single-stage engine runs.
"""

from __future__ import annotations

import dataclasses
import itertools

from sqlglot import exp


@dataclasses.dataclass(frozen=True)
class TableInfo:
    """A table as the planner sees it: columns in Pinot's order (by name), their Pinot
    types, and what the planner may exploit (partitioning, dimension table)."""

    name: str  # raw name, as the catalog spells it
    columns: dict[str, tuple[str, bool]]  # name -> (Pinot type, single value)
    partition_column: str | None = None
    partition_function: str | None = None
    num_partitions: int = 0
    partition_function_config: tuple[tuple[str, str], ...] = ()  # sorted items
    is_dim_table: bool = False
    primary_keys: tuple[str, ...] = ()
    num_docs: int = 0  # an estimate, read only through stages.size_class (the plan cache)
    # Pinot's planner nullability: without the schema's enableColumnBasedNullHandling no
    # column is nullable (IS NULL is false), with it those marked notNull are not
    not_null: frozenset[str] = frozenset()
    # columns whose leaf answers the stored default instead of NULL (notNull ones)
    default_valued: frozenset[str] = frozenset()

    def column(self, name: str) -> str | None:
        """The stored spelling of ``name`` (identifiers are case-insensitive)."""
        if name in self.columns:
            return name
        lowered = name.lower()
        for column in self.columns:
            if column.lower() == lowered:
                return column
        return None


@dataclasses.dataclass(frozen=True)
class Field:
    id: str  # unique in the query: the column name between operators
    name: str  # the name the user sees
    qualifier: str | None = None


class FieldIds:
    """Hands out field ids for one query."""

    def __init__(self) -> None:
        self._next = itertools.count()

    def new(self, name: str, qualifier: str | None = None) -> Field:
        return Field(f"${next(self._next)}", name, qualifier)


def ref(field: Field | str) -> exp.Column:
    """A column expression naming a field."""
    return exp.column(field if isinstance(field, str) else field.id, quoted=True)


@dataclasses.dataclass(eq=False)
class Node:
    fields: list[Field]

    @property
    def inputs(self) -> list[Node]:
        return []

    def replace_inputs(self, inputs: list[Node]) -> Node:
        return dataclasses.replace(self, **dict(zip(self._input_names(), inputs, strict=True)))

    def _input_names(self) -> list[str]:
        return []


@dataclasses.dataclass(eq=False)
class Unary(Node):
    input: Node

    @property
    def inputs(self) -> list[Node]:
        return [self.input]

    def _input_names(self) -> list[str]:
        return ["input"]


@dataclasses.dataclass(eq=False)
class Scan(Node):
    table: TableInfo
    columns: list[str]  # stored column names, aligned with ``fields``
    hints: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class LeafScan(Node):
    """A scan the single-stage engine runs on the servers: the columns of the table that
    pass ``filter`` (Pinot SQL over stored column names; None: every row)."""

    table: TableInfo
    columns: list[str]
    filter: str | None = None
    hints: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class Values(Node):
    rows: list[list[exp.Expression]]


@dataclasses.dataclass(eq=False)
class Filter(Unary):
    condition: exp.Expression


@dataclasses.dataclass(eq=False)
class Project(Unary):
    exprs: list[exp.Expression]  # aligned with ``fields``


@dataclasses.dataclass(eq=False)
class Aggregate(Unary):
    """``fields`` = keys then aggregates. ``phase``: "direct" (whole), "leaf" (partial, per
    worker) or "final" (merges partials); ``grouping_sets``: indexes into keys, or None."""

    keys: list[exp.Expression]
    aggs: list[exp.Expression]
    phase: str = "direct"
    grouping_sets: list[list[int]] | None = None
    hints: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class Join(Node):
    left: Node
    right: Node
    kind: str  # inner | left | right | full | cross | semi | anti | asof | left_asof
    condition: exp.Expression | None = None
    match_condition: exp.Expression | None = None  # ASOF
    null_aware: bool = False  # NOT IN: a NULL on the right rejects every row
    hints: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def inputs(self) -> list[Node]:
        return [self.left, self.right]

    def _input_names(self) -> list[str]:
        return ["left", "right"]


@dataclasses.dataclass(eq=False)
class Window(Unary):
    """``fields`` = the input's fields then one per window expression."""

    windows: list[exp.Expression]
    hints: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class SortKey:
    expr: exp.Expression
    desc: bool = False
    nulls_first: bool = False


@dataclasses.dataclass(eq=False)
class Sort(Unary):
    keys: list[SortKey]
    limit: int | None = None
    offset: int = 0


@dataclasses.dataclass(eq=False)
class SetOp(Node):
    kind: str  # union | intersect | except
    all: bool
    left: Node
    right: Node
    hints: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def inputs(self) -> list[Node]:
        return [self.left, self.right]

    def _input_names(self) -> list[str]:
        return ["left", "right"]


@dataclasses.dataclass(eq=False)
class Unnest(Unary):
    """``CROSS JOIN UNNEST(arr) AS u(e)``: one row per element; ``fields`` = the input's
    then one per array."""

    arrays: list[exp.Expression]


@dataclasses.dataclass(eq=False)
class Exchange(Unary):
    """Data moves between stages: ``hash`` on key fields, ``broadcast`` to every worker,
    ``singleton`` to one, ``random`` anywhere, ``partitioned`` 1:1 to the worker of the same
    partition (a colocated join, ``engine.multistage.colocation``)."""

    distribution: str
    keys: list[str] = dataclasses.field(default_factory=list)  # field ids
    single_row: bool = False  # a scalar subquery: more than one row is an error
    partition_column: str | None = None  # ``partitioned``: the table's column it is keyed on


def walk(node: Node):
    yield node
    for child in node.inputs:
        yield from walk(child)


def transform(node: Node, fn) -> Node:
    """Bottom-up rewrite: ``fn(node with rewritten inputs)``."""
    inputs = [transform(child, fn) for child in node.inputs]
    if inputs and any(a is not b for a, b in zip(inputs, node.inputs, strict=True)):
        node = node.replace_inputs(inputs)
    return fn(node)
