"""One server's view of an upsert/dedup table without services: real consuming segments
(``MutableSegment`` with its gate), real builds and loads of committed segments, a restart
that loads the segments from disk again, and queries through the query engine with the
valid docs ``TableMetadata.query_view`` gives, as the server does."""

from __future__ import annotations

import random

import pyarrow as pa

from engine.query.reduce import reduce
from engine.query.runner import default_engine
from engine.realtime import MutableSegment
from engine.segment import load_segment
from engine.spi import Schema, TableConfig
from engine.upsert import ServerDefaults, TableMetadata

CREATED = "20260101T0000Z"


class Server:
    def __init__(self, schema: dict, config: dict, tmp_path, *, partitions=(0,),
                 defaults: ServerDefaults | None = None):  # fmt: skip
        self.schema = Schema.from_json(schema)
        self.config = TableConfig.from_json(config, self.schema)
        self.table = self.config.table_name
        self.dir = tmp_path
        self.defaults = defaults or ServerDefaults()
        self.meta = TableMetadata(self.config, self.schema, table_dir=tmp_path / "table",
                                  defaults=self.defaults)  # fmt: skip
        self.served: dict[str, object] = {}  # name -> ImmutableSegment or MutableSegment
        self.committed: list[tuple[int, int, str]] = []  # (partition, sequence, dir)
        self.sequence = {p: 0 for p in partitions}
        self.consuming: dict[int, MutableSegment] = {}
        self.pending: dict[int, list[dict]] = {p: [] for p in partitions}  # rows since commit
        for p in partitions:
            self._start(p)

    def name(self, partition: int, sequence: int) -> str:
        return f"{self.table}__{partition}__{sequence}__{CREATED}"

    def _start(self, partition: int) -> None:
        name = self.name(partition, self.sequence[partition])
        mutable = MutableSegment(name, self.schema, self.config)
        self.meta.start_consuming(name, mutable, partition=partition,
                                  sequence=self.sequence[partition], creation_ms=1)  # fmt: skip
        self.consuming[partition] = mutable
        self.served[name] = mutable

    def consume(self, partition: int, rows: list[dict], batch: int = 97):
        results = []
        for i in range(0, len(rows), batch):
            chunk = rows[i : i + batch]
            results.append(self.consuming[partition].index(_arrow(chunk)))
            self.pending[partition].extend(chunk)
        return results

    def commit(self, partition: int) -> None:
        mutable = self.consuming[partition]
        built = mutable.build(self.dir / "built" / mutable.name)
        segment = load_segment(built.path)
        sequence = self.sequence[partition]

        def publish():
            self.served[mutable.name] = segment

        self.meta.add_segment(mutable.name, segment, partition=partition, sequence=sequence,
                              creation_ms=1, on_publish=publish)  # fmt: skip
        self.committed.append((partition, sequence, built.path))
        self.pending[partition] = []
        self.sequence[partition] += 1
        self._start(partition)

    def restart(self, *, shuffle_seed: int | None = None) -> None:
        """A new process: committed segments load from disk (in any order), the consuming
        ones consume their rows again."""
        self.meta = TableMetadata(self.config, self.schema, table_dir=self.dir / "table",
                                  defaults=self.defaults)  # fmt: skip
        self.served = {}
        order = list(self.committed)
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(order)
        else:
            order.sort()
        for partition, sequence, path in order:
            segment = load_segment(path)
            name = self.name(partition, sequence)
            self.meta.add_segment(name, segment, partition=partition, sequence=sequence,
                                  creation_ms=1)  # fmt: skip
            self.served[name] = segment
        for partition in list(self.consuming):
            pending = self.pending[partition]
            self.pending[partition] = []
            self._start(partition)
            self.consume(partition, pending)

    def query(self, sql: str, **options) -> dict:
        engine = default_engine()
        options = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
        plan = engine.compile(sql, self.schema, options)
        names = sorted(self.served)
        segments, valid = [], []
        view = {} if options.get("skipUpsert") == "true" else self.meta.query_view(names, options)
        for name in names:
            if name in view:
                segment, docs = view[name]
            else:
                served = self.served[name]
                segment = served.snapshot() if isinstance(served, MutableSegment) else served
                docs = None
            segments.append(segment)
            valid.append(docs)
        result = engine.execute_server(plan, segments, valid_docs=valid, parallel=False)
        response = reduce(plan, [result])
        assert not response.get("exceptions"), response["exceptions"]
        return response

    def rows(self, sql: str, **options) -> list:
        return self.query(sql, **options)["resultTable"]["rows"]


def _arrow(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows)
