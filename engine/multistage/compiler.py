"""One request -> a compiled multi-stage query: the logical plan, its exchanges and the
type of every field (``engine.multistage.typing``). Fragmenting into stages needs the
routing and happens at dispatch (``engine.multistage.coordinator``)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from sqlglot import exp

from engine.multistage.explain import explain_text
from engine.multistage.logical import Node
from engine.multistage.optimize import optimize
from engine.multistage.options import Limits
from engine.multistage.planner import Catalog, Planner
from engine.multistage.sql import MultiStageQuery, hints_of, parse_request
from engine.multistage.stages import PhysicalPlanner
from engine.multistage.types import pinot_type
from engine.multistage.typing import Typing


@dataclasses.dataclass
class CompiledQuery:
    request: MultiStageQuery
    logical: Node
    physical: Node
    typing: Typing
    tables: list[str]
    limits: Limits

    @property
    def options(self) -> dict[str, str]:
        return self.request.options

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.physical.fields]

    @property
    def column_types(self) -> list[str]:
        return [pinot_type(self.typing.types[f.id]) for f in self.physical.fields]

    @property
    def schema(self) -> pa.Schema:
        return self.typing.schema(self.physical.fields)

    def explain(self, placed=None) -> str:
        """``placed(exchange)`` -> (distribution, why not colocated) as run, or None."""
        return explain_text(self.physical, placed=placed)


def compile_request(sql: str, options: dict[str, str] | None, catalog: Catalog) -> CompiledQuery:
    request = parse_request(sql, options)
    return compile_parsed(request, catalog)


def compile_parsed(request: MultiStageQuery, catalog: Catalog) -> CompiledQuery:
    planner = Planner(catalog, request.options)
    logical = optimize(planner.plan(request.tree))
    physical = PhysicalPlanner(planner.ids, request.options).plan(logical)
    typing = Typing()
    typing.run(physical)
    hints: dict = {}
    for select in request.tree.find_all(exp.Select):
        for key, value in hints_of(select).items():
            hints.setdefault(key, {}).update(value)
    limits = Limits.of(request.options, hints)
    return CompiledQuery(request, logical, physical, typing, sorted(set(planner.tables)), limits)
