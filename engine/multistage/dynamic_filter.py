"""Dynamic filters: the keys of a join's small side narrow what the big side's leaf reads.

A stage that reads a table (its leaf) and joins it with inputs every worker holds whole (a
broadcast, or a dimension table read on the spot) first computes the distinct join keys of
that other side, and the leaf skips every row whose key is not among them: such a row can
yield no row of an inner join, nor of a semi join that keeps the leaf's side. For a star
join this turns each dimension's filter into an IN filter on the fact table evaluated in
the segment scan (``engine.multistage.leaf.narrow``), so the rows a join would drop are
never read, converted or joined. Pinot does this for semi joins on request (dynamic
broadcast); here every join where it is provably safe gets it.

Provably safe: from the leaf up to the join, rows only pass filters, projections that carry
the key as a column, and inner joins (or the kept side of a semi join), so a row dropped
early would only have been dropped by the join; the join is inner, or semi with the leaf on
its kept side; its equality compares the key with a column of the other side of one kind
(integers, other numbers, or text); and the other side reads only inputs complete on every
worker, so its keys are all the keys. A NULL key matches nothing, so NULLs are not kept.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from sqlglot import exp

from engine.multistage.leaf import common_key_type
from engine.multistage.logical import Filter, Join, Node, Project, walk
from engine.multistage.render import Input, quote
from engine.multistage.stages import equi_keys


@dataclasses.dataclass
class DynamicFilter:
    leaf: int  # index of the stage's leaf it narrows
    column: str  # the leaf's stored column
    build: str  # the join's other side, over the stage's inputs
    key: str  # its key's field id

    @property
    def sql(self) -> str:
        """The other side's non-NULL keys (not DISTINCT: a KeySet takes repeats, and a hash
        aggregate costs more than the repeats)."""
        key = quote(self.key)
        return f'SELECT {key} FROM ({self.build}) AS "$build" WHERE {key} IS NOT NULL'

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> DynamicFilter:
        return cls(int(d["leaf"]), d["column"], d["build"], d["key"])


def dynamic_filters(body: Node, targets: dict[str, tuple[int, dict[str, str]]],
                    whole: set[str], render, types: dict[str, pa.DataType]
                    ) -> list[DynamicFilter]:  # fmt: skip
    """The filters of a stage's operator tree ``body``. ``targets``: leaf input table ->
    (leaf index, {field id: stored column}) of the leaves that may be narrowed; ``whole``:
    input tables every worker holds complete; ``render(node)``: a node's SQL."""
    found: list[DynamicFilter] = []
    for join in (n for n in walk(body) if isinstance(n, Join)):
        if join.kind not in ("inner", "semi"):
            continue
        lefts, rights = equi_keys(join)
        sides = [(join.left, join.right, lefts, rights)]
        if join.kind == "inner":
            sides.append((join.right, join.left, rights, lefts))
        for probe, build, probe_keys, build_keys in sides:
            origins = _origins(probe, targets)
            if not origins or not _whole(build, whole) or _unfiltered_scan(build):
                continue
            for probe_key, build_key in zip(probe_keys, build_keys, strict=True):
                origin = origins.get(probe_key)
                kinds = (types.get(probe_key), types.get(build_key))
                if origin is None or None in kinds or common_key_type(*kinds) is None:
                    continue
                found.append(DynamicFilter(origin[0], origin[1], render(build), build_key))
    return found


def _origins(node: Node, targets) -> dict[str, tuple[int, str]]:
    """Field id -> (leaf, column) of ``node``'s fields that are a target leaf's column,
    reached only through nodes that drop rows and never invent or change them."""
    if isinstance(node, Input):
        if node.table not in targets:
            return {}
        index, columns = targets[node.table]
        return {f.id: (index, columns[f.id]) for f in node.fields if f.id in columns}
    if isinstance(node, Filter):
        return _origins(node.input, targets)
    if isinstance(node, Project):
        inner = _origins(node.input, targets)
        return {f.id: inner[e.name] for f, e in zip(node.fields, node.exprs, strict=True)
                if isinstance(e, exp.Column) and e.name in inner}  # fmt: skip
    if isinstance(node, Join) and node.kind in ("inner", "cross"):
        return {**_origins(node.left, targets), **_origins(node.right, targets)}
    if isinstance(node, Join) and node.kind == "semi":
        return _origins(node.left, targets)
    return {}


def _whole(node: Node, whole: set[str]) -> bool:
    return all(n.table in whole for n in walk(node) if isinstance(n, Input))


def _unfiltered_scan(node: Node) -> bool:
    """Whether ``node`` only projects a table read whole by this stage: its keys are every
    key, which rarely narrows and would cost a query and a pass per segment (skipping a
    dynamic filter is always safe: the join still drops what it would have)."""
    return all(isinstance(n, Project) or (isinstance(n, Input) and n.table.startswith("$leaf"))
               for n in walk(node))  # fmt: skip
