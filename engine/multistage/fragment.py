"""A plan with exchanges -> stage specs with workers, ready to dispatch.

Each exchange cuts the plan: the part below becomes a stage that sends, the part above
receives it as a table (``$r<stage>``). A stage runs on:

* the servers that serve its table's segments, when it scans one (its leaf), one worker per
  server, with the segments the broker's routing picked for it;
* every server of the query, when it receives a hash-partitioned input;
* one server otherwise (a singleton: all its inputs are single or broadcast);
* the broker, for stage 0 (the top, which builds the response).
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections import Counter

import pyarrow as pa

from engine.multistage.colocation import assign_partitions
from engine.multistage.dynamic_filter import DynamicFilter, dynamic_filters
from engine.multistage.exchange import schema_bytes, schema_from_bytes
from engine.multistage.leaf_aggregate import STATE_COLUMN, STATE_SCHEMA, LeafAggregate
from engine.multistage.logical import Exchange, Field, LeafScan, Node, transform
from engine.multistage.render import Input, Renderer
from engine.multistage.star import StarJoin, star_join
from engine.multistage.udafs import UdafSpec
from engine.multistage.udfs import UdfSpec, spec_from_json

BROKER = "broker"


@dataclasses.dataclass
class LeafSpec:
    table: str  # raw table name
    columns: list[str]
    field_ids: list[str]
    filter: str | None
    schema: pa.Schema
    dim_table: bool = False
    default_valued: list[str] = dataclasses.field(default_factory=list)  # never NULL
    aggregate_sql: str | None = None  # a single-stage aggregation (leaf_aggregate)

    def to_json(self) -> dict:
        return {"table": self.table, "columns": self.columns, "fieldIds": self.field_ids,
                "filter": self.filter, "schema": _b64(schema_bytes(self.schema)),
                "dimTable": self.dim_table, "defaultValued": self.default_valued,
                "aggregateSql": self.aggregate_sql}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict) -> LeafSpec:
        return cls(d["table"], d["columns"], d["fieldIds"], d["filter"],
                   schema_from_bytes(base64.b64decode(d["schema"])), d["dimTable"],
                   d.get("defaultValued", []), d.get("aggregateSql"))  # fmt: skip


@dataclasses.dataclass
class ReceiveSpec:
    stage: int  # the sending stage
    table: str
    schema: pa.Schema
    single_row: bool = False
    build_side: str | None = None  # "join" or "window": the limits of that operator apply
    merge_sql: str | None = None  # single-stage states to merge (leaf_aggregate)
    merge_columns: dict | None = None  # the table's columns, to plan the merge
    merge_options: dict | None = None  # the single-stage options the states were made with

    def to_json(self) -> dict:
        return {
            "stage": self.stage,
            "table": self.table,
            "schema": _b64(schema_bytes(self.schema)),
            "singleRow": self.single_row,
            "buildSide": self.build_side,
            "mergeSql": self.merge_sql,
            "mergeColumns": self.merge_columns,
            "mergeOptions": self.merge_options,
        }

    @classmethod
    def from_json(cls, d: dict) -> ReceiveSpec:
        return cls(d["stage"], d["table"], schema_from_bytes(base64.b64decode(d["schema"])),
                   d["singleRow"], d.get("buildSide"), d.get("mergeSql"),
                   d.get("mergeColumns"), d.get("mergeOptions"))  # fmt: skip


@dataclasses.dataclass
class WorkerSpec:
    index: int
    server: str  # instance id, or "broker"
    address: str  # host:port of its mailboxes
    segments: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # table_TYPE -> names

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class StageSpec:
    id: int
    sql: str
    schema: pa.Schema
    receives: list[ReceiveSpec]
    leaves: list[LeafSpec]
    workers: list[WorkerSpec]
    distribution: str | None = None  # how it sends (None: stage 0)
    keys: list[str] = dataclasses.field(default_factory=list)
    to_stage: int | None = None
    receivers: list[str] = dataclasses.field(default_factory=list)  # addresses, by worker
    udfs: list[UdfSpec | UdafSpec] = dataclasses.field(default_factory=list)
    kind: str = "INTERMEDIATE"  # LEAF | INTERMEDIATE | ROOT, for stats
    operators: list[str] = dataclasses.field(default_factory=list)  # for stageStats
    dynamic: list[DynamicFilter] = dataclasses.field(default_factory=list)
    partition_column: str | None = None  # a ``partitioned`` send: its table's column
    fallback: str | None = None  # why a ``partitioned`` send became a hash shuffle
    threads: int | None = None  # DataFusion's partitions per worker, when not the query's
    star: StarJoin | None = None  # its joins as key lookups (engine.multistage.star)

    def to_json(self) -> dict:
        return {
            "id": self.id, "sql": self.sql, "schema": _b64(schema_bytes(self.schema)),
            "receives": [r.to_json() for r in self.receives],
            "leaves": [leaf.to_json() for leaf in self.leaves],
            "workers": [w.to_json() for w in self.workers], "distribution": self.distribution,
            "keys": self.keys, "toStage": self.to_stage, "receivers": self.receivers,
            "udfs": [u.to_json() for u in self.udfs], "kind": self.kind,
            "operators": self.operators, "dynamic": [d.to_json() for d in self.dynamic],
            "threads": self.threads, "star": self.star.to_json() if self.star else None,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict) -> StageSpec:
        return cls(
            d["id"], d["sql"], schema_from_bytes(base64.b64decode(d["schema"])),
            [ReceiveSpec.from_json(r) for r in d["receives"]],
            [LeafSpec.from_json(leaf) for leaf in d["leaves"]],
            [WorkerSpec(**w) for w in d["workers"]], d["distribution"], d["keys"],
            d["toStage"], d["receivers"], [spec_from_json(u) for u in d["udfs"]],
            d.get("kind", "INTERMEDIATE"), d.get("operators", []),
            [DynamicFilter.from_json(f) for f in d.get("dynamic", [])],
            threads=d.get("threads"), star=StarJoin.from_json(d.get("star")),
        )  # fmt: skip

    def senders_of(self, stage: int, stages: dict[int, StageSpec]) -> int:
        return len(stages[stage].workers)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Fragmenter:
    """Cuts the plan (``cut``: stage templates, without workers, the same for every run of
    a query) and places the workers (``place``). ``route(raw_table)`` -> {server id:
    {table_TYPE: [segments]}}; ``servers`` -> {server id: "host:port"} of the live servers;
    ``broker_address`` is where stage 0's mailboxes are."""

    def __init__(self, typing, route=None, servers: dict[str, str] | None = None,
                 broker_address: str = "") -> None:  # fmt: skip
        self.typing = typing
        self.route = route
        self.servers = servers or {}
        self.broker_address = broker_address
        self.stages: dict[int, StageSpec] = {}
        self.stage_of_exchange: dict[int, int] = {}

    def fragment(self, root: Node) -> list[StageSpec]:
        return place(self.cut(root), self.route, self.servers, self.broker_address)

    def cut(self, root: Node) -> list[StageSpec]:
        self._cut(root, 0, None)
        for spec in self.stages.values():
            spec.udfs = list(self.typing.mapper.specs.values())
        return [self.stages[i] for i in sorted(self.stages)]

    def _cut(self, node: Node, stage_id: int, send: Exchange | None) -> None:
        receives: list[ReceiveSpec] = []
        leaves: list[LeafSpec] = []
        operators: list[str] = []
        whole: set[str] = set()  # inputs complete on every worker of the stage
        targets: dict[str, tuple[int, dict[str, str]]] = {}  # leaves dynamic filters narrow

        def replace(n: Node) -> Node:
            if isinstance(n, Exchange):
                child = self._new_stage_id()
                self.stage_of_exchange[id(n)] = child
                receive = ReceiveSpec(child, f"$r{child}", self.typing.schema(n.fields),
                                      n.single_row)  # fmt: skip
                if isinstance(n.input, LeafAggregate):
                    receive.merge_sql = n.input.sql
                    receive.merge_columns = {k: list(v) for k, v in n.input.table.columns.items()}
                    receive.merge_options = dict(n.input.options)
                receives.append(receive)
                self._cut(n.input, child, n)
                if n.distribution == "broadcast":
                    whole.add(f"$r{child}")
                return Input(n.fields, f"$r{child}")
            if isinstance(n, LeafAggregate):
                leaves.append(LeafSpec(n.table.name, [], [], None, STATE_SCHEMA,
                                       n.table.is_dim_table, aggregate_sql=n.sql))  # fmt: skip
                return Input([Field(STATE_COLUMN, STATE_COLUMN)], "$leaf0")
            if isinstance(n, LeafScan):
                leaves.append(LeafSpec(n.table.name, n.columns, [f.id for f in n.fields],
                                       n.filter, self.typing.schema(n.fields),
                                       n.table.is_dim_table,
                                       sorted(n.table.default_valued & set(n.columns))))  # fmt: skip
                name = f"$leaf{len(leaves) - 1}"
                if n.table.is_dim_table:  # on every server, read whole by each worker
                    whole.add(name)
                else:
                    targets[name] = (len(leaves) - 1, dict(zip(leaves[-1].field_ids, n.columns,
                                                               strict=True)))  # fmt: skip
                return Input(n.fields, name)
            operators.append(type(n).__name__)
            return n

        body = _top_down(node, replace)
        sql = Renderer(self.typing.mapper, self.typing.types).sql(body)
        dynamic = dynamic_filters(body, targets, whole, self._render, self.typing.types)
        schema = (STATE_SCHEMA if isinstance(node, LeafAggregate)
                  else self.typing.schema(body.fields))  # fmt: skip
        spec = StageSpec(stage_id, sql, schema, receives, leaves, [], operators=operators,
                         dynamic=dynamic,
                         star=star_join(body, whole, self._render, self.typing.types))  # fmt: skip
        if send is not None:
            spec.distribution = send.distribution
            spec.keys = list(send.keys)
            spec.partition_column = send.partition_column
        spec.kind = "ROOT" if stage_id == 0 else ("LEAF" if leaves else "INTERMEDIATE")
        self.stages[stage_id] = spec

    def _render(self, node: Node) -> str:
        return Renderer(self.typing.mapper, self.typing.types).sql(node)

    def _new_stage_id(self) -> int:
        self._next_id = getattr(self, "_next_id", 0) + 1
        return self._next_id


def place(templates: list[StageSpec], route, servers: dict[str, str], broker_address: str,
          partitions=None, parallelism: int = 1) -> list[StageSpec]:  # fmt: skip
    """The stages of ``templates`` (``Fragmenter.cut``) with their workers, for one run.
    ``partitions(raw_table, column)`` -> the table's segments by partition, or the reason
    there are none (``engine.multistage.colocation.place_partitions``); ``parallelism``:
    workers per server of a stage that receives a hash shuffle (``stageParallelism``)."""
    stages = {t.id: dataclasses.replace(t, workers=[], receivers=[], to_stage=None)
              for t in templates}  # fmt: skip
    ordered = sorted(servers)
    placed = _place_colocated(stages, partitions, servers)
    for spec in sorted(stages.values(), key=lambda s: -s.id):
        if spec.id == 0:
            spec.workers = [WorkerSpec(0, BROKER, broker_address)]
            continue
        partitioned = [leaf for leaf in spec.leaves if not leaf.dim_table]
        hashed = any(stages[r.stage].distribution == "hash" for r in spec.receives)
        if spec.id in placed:
            spec.workers = placed[spec.id]
        elif partitioned:
            routed = route(partitioned[0].table)
            spec.workers = [
                WorkerSpec(i, server, servers[server], segments)
                for i, (server, segments) in enumerate(sorted(routed.items()))
            ] or [WorkerSpec(0, ordered[0], servers[ordered[0]], {})]
        elif hashed:
            spread = [s for s in ordered for _ in range(parallelism)]
            spec.workers = [WorkerSpec(i, s, servers[s]) for i, s in enumerate(spread)]
        else:
            server = ordered[spec.id % len(ordered)]
            spec.workers = [WorkerSpec(0, server, servers[server])]
        for leaf in spec.leaves:
            if leaf.dim_table:  # every segment, on each worker's server
                for worker in spec.workers:
                    routed = route(leaf.table, everything_on=worker.server)
                    worker.segments.update(routed.get(worker.server, {}))
    for spec in stages.values():
        for r in spec.receives:
            child = stages[r.stage]
            child.to_stage = spec.id
            child.receivers = [w.address for w in spec.workers]
    return [stages[i] for i in sorted(stages)]


def _place_colocated(stages: dict[int, StageSpec], partitions,
                     servers: dict[str, str]) -> dict[int, list[WorkerSpec]]:  # fmt: skip
    """Workers of each colocated join and its two sides: one per partition, on a server
    holding all of it. A join that cannot be placed so sends through a hash shuffle."""
    placed: dict[int, list[WorkerSpec]] = {}
    for spec in stages.values():
        sides = [stages[r.stage] for r in spec.receives
                 if stages[r.stage].distribution == "partitioned"]  # fmt: skip
        if not sides:
            continue
        tables = [(side.leaves[0].table, side.partition_column) for side in sides]
        found = assign_partitions(tables, partitions, set(servers)) if partitions else \
            (None, "no partition metadata")  # fmt: skip
        assignment, reason = found
        if assignment is None:
            for side in sides:
                side.distribution, side.fallback = "hash", reason
            continue
        for i, side in enumerate(sides):
            placed[side.id] = [WorkerSpec(w, p.server, servers[p.server], p.segments[i])
                               for w, p in enumerate(assignment)]  # fmt: skip
        placed[spec.id] = [WorkerSpec(w, p.server, servers[p.server])
                           for w, p in enumerate(assignment)]  # fmt: skip
        # the partitions are the parallelism: a worker need not split its rows again
        per_server = max(Counter(p.server for p in assignment).values())
        spec.threads = max(1, (os.cpu_count() or 1) // per_server)
    return placed


def _top_down(node: Node, visit) -> Node:
    replaced = visit(node)
    if replaced is not node:
        return replaced
    inputs = [_top_down(c, visit) for c in node.inputs]
    return node.replace_inputs(inputs) if inputs else node


__all__ = [
    "BROKER",
    "Fragmenter",
    "LeafSpec",
    "ReceiveSpec",
    "StageSpec",
    "WorkerSpec",
    "place",
    "transform",
]
