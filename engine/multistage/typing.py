"""The Arrow type of every field of a plan, found by DataFusion itself over empty inputs.

Bottom-up, each node is rendered over empty tables of its inputs' (already typed) fields
and DataFusion plans it; the planned schema gives the node's field types. So the types are
exactly those the operators will produce: a worker whose inputs are empty still answers with
the right schema, and every mailbox knows its schema before the first row. Pinot scalar
calls are declared as UDFs on the way (``engine.multistage.udfs``).
"""

from __future__ import annotations

import pyarrow as pa
from datafusion import SessionContext

from engine.multistage.errors import classify
from engine.multistage.leaf_aggregate import LeafAggregate, schema_of
from engine.multistage.logical import Exchange, LeafScan, Node
from engine.multistage.render import Input, Renderer, quote
from engine.multistage.types import arrow_type
from engine.multistage.udfs import ScalarMapper, register_builtins

_ALL = "$typed"


class Typing:
    def __init__(self) -> None:
        self.ctx = SessionContext()
        register_builtins(self.ctx)
        self.types: dict[str, pa.DataType] = {}
        self.mapper = ScalarMapper()
        self.mapper.ctx = self.ctx
        self.mapper.arg_types = self._arg_types

    def run(self, node: Node) -> dict[str, pa.DataType]:
        self._node(node)
        return self.types

    def schema(self, fields) -> pa.Schema:
        return pa.schema([(f.id, self.types[f.id]) for f in fields])

    def _node(self, node: Node) -> None:
        for child in node.inputs:
            self._node(child)
        if isinstance(node, LeafScan):
            for f, column in zip(node.fields, node.columns, strict=True):
                pinot, single = node.table.columns[column]
                self.types[f.id] = arrow_type(pinot, single)
            return
        if isinstance(node, LeafAggregate):
            for f, column in zip(node.fields, schema_of(node), strict=True):
                self.types[f.id] = column.type
            return
        if isinstance(node, Input | Exchange):
            return  # (an exchange moves its input's fields unchanged)
        inputs = []
        for i, child in enumerate(node.inputs):
            name = f"$in{i}"
            self._register(name, self.schema(child.fields))
            inputs.append(Input(child.fields, name))
        self._register(_ALL, pa.schema(list(self.types.items())))
        shallow = node.replace_inputs(inputs) if inputs else node
        sql = Renderer(self.mapper, self.types).sql(shallow)
        try:
            schema = self.ctx.sql(sql).schema()
        except Exception as exc:  # DataFusion's planning error: the query's fault
            raise classify(exc, sql) from exc
        for f, column in zip(node.fields, schema, strict=False):
            self.types[f.id] = column.type

    def _arg_types(self, exprs) -> list[pa.DataType]:
        renderer = Renderer(self.mapper, self.types)
        items = ", ".join(f"{renderer.expr(e)} AS {quote(f'a{i}')}" for i, e in enumerate(exprs))
        self._register(_ALL, pa.schema(list(self.types.items())))
        sql = f"SELECT {items} FROM {quote(_ALL)}"
        try:
            return [c.type for c in self.ctx.sql(sql).schema()]
        except Exception as exc:
            raise classify(exc, sql) from exc

    def _register(self, name: str, schema: pa.Schema) -> None:
        if self.ctx.table_exist(name):
            self.ctx.deregister_table(name)
        self.ctx.register_record_batches(name, [[pa.RecordBatch.from_pylist([], schema=schema)]])
