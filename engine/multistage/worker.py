"""One worker of one stage: read its inputs, run its operators, send its rows on.

Inputs are the leaf's rows (the single-stage engine on this server's segments) and the
mailboxes of the stages below. The operators are the stage's SQL run by DataFusion over
them, in a session with the query's memory budget (DataFusion's memory pool: a join or
sort over it fails the query with 245, the process stays up). The output streams batch by
batch so a cancel or the deadline stops it between batches; then it is partitioned by the
stage's distribution and posted to the receiving workers. Any failure is posted to them
too, so they fail at once instead of waiting for rows that will not come.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

import pyarrow as pa
from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext

from engine.multistage.errors import (
    QueryCancelledError,
    ResourceLimitError,
    classify,
)
from engine.multistage.exchange import partition
from engine.multistage.fragment import StageSpec, WorkerSpec
from engine.multistage.leaf import KeySet
from engine.multistage.leaf_aggregate import STATE_SCHEMA, merge
from engine.multistage.mailbox import MailboxClient, Mailboxes
from engine.multistage.options import Limits
from engine.multistage.star import decode, dictionaries, join_star
from engine.multistage.udfs import register_builtins, register_udf
from engine.query.errors import QueryError, QueryExecutionError, QueryTimeoutError
from engine.query.plan import ColumnInfo, compile_query

# A stage reading fewer rows runs its operators in one DataFusion partition: splitting them
# (round-robin repartition, per-partition hash tables, a final merge) cost more CPU than it
# saved on SSB's joins, where each server's leaf stage already keeps one of the cores busy.
PARALLEL_INPUT_ROWS = 1_000_000


@dataclasses.dataclass
class WorkerStats:
    stage: int
    worker: int
    server: str
    execution_ms: float = 0.0
    emitted_rows: int = 0
    input_rows: int = 0
    leaf: dict = dataclasses.field(default_factory=dict)
    flags: dict = dataclasses.field(default_factory=dict)
    tables: list[str] = dataclasses.field(default_factory=list)
    lookup_joins: int = 0  # the stage's joins this worker ran as the star's key lookups

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


class StageWorker:
    def __init__(self, request_id: int, spec: StageSpec, worker: WorkerSpec,
                 stages: dict[int, int], mailboxes: Mailboxes, client: MailboxClient,
                 leaf_reader, limits: Limits, deadline: float) -> None:  # fmt: skip
        self.request_id = request_id
        self.spec = spec
        self.worker = worker
        self.senders = stages  # sending stage -> its number of workers
        self.mailboxes = mailboxes
        self.client = client
        self.leaf_reader = leaf_reader
        self.limits = limits
        self.deadline = deadline
        self.stats = WorkerStats(spec.id, worker.index, worker.server)
        self.inputs: dict[str, pa.Table] = {}  # the tables registered, by name

    def run(self) -> pa.Table | None:
        """The stage's rows when it is stage 0, else None (they were sent)."""
        started = time.monotonic()
        try:
            table = self._execute()
            self.stats.emitted_rows = table.num_rows
            if self.spec.id == 0:
                return table
            self._send(table)
            return None
        except QueryError as exc:
            self._fail(exc)
            raise
        except Exception as exc:  # an operator bug fails the query, never the process
            error = classify(exc)
            self._fail(error)
            raise error from exc
        finally:
            self.stats.execution_ms = round((time.monotonic() - started) * 1000, 3)

    # --- inputs and operators ----------------------------------------------------------------
    def _execute(self) -> pa.Table:
        ctx = self._session()
        for receive in self.spec.receives:
            self._receive(ctx, receive)
        narrowed = {d.leaf for d in self.spec.dynamic}
        for i, leaf in enumerate(self.spec.leaves):  # the whole inputs first: they narrow
            if i not in narrowed:
                self._read_leaf(ctx, i, leaf, [])
        star = self.spec.star
        sides = {d.sql: self._query(ctx, d.sql) for d in star.dimensions} if star else {}
        for i in sorted(narrowed):
            self._check_live()
            keys = [(d.column, KeySet(self._keys(ctx, d, sides))) for d in self.spec.dynamic
                    if d.leaf == i]  # fmt: skip
            self._read_leaf(ctx, i, self.spec.leaves[i], keys)
        self._check_live()
        sql, coded = self.spec.sql, None
        # big inputs go to DataFusion's parallel hash joins, which stream into the operators
        # above; the star's lookups run on one core and gather every joined row first
        if star is not None and self.stats.input_rows <= PARALLEL_INPUT_ROWS and \
                (coded := self._star(ctx, star, sides)) is not None:  # fmt: skip
            sql = star.sql
            self.stats.lookup_joins = len(star.dimensions)
        try:
            threads = self.spec.threads or self.limits.threads  # (a colocated worker's own)
            if threads > 1 and (self.spec.threads or self.stats.input_rows > PARALLEL_INPUT_ROWS):
                ctx.sql(f"SET datafusion.execution.target_partitions = {threads}")
            df = ctx.sql(sql)
            batches = []
            for batch in df.execute_stream():
                batches.append(batch.to_pyarrow())
                self._check_live()
        except (QueryError, QueryCancelledError):
            raise
        except Exception as exc:
            raise classify(exc, self.spec.sql) from exc
        if not batches:
            return self.spec.schema.empty_table()
        table = pa.Table.from_batches(batches)
        if coded:
            table = decode(star, table, coded)
        if table.schema != self.spec.schema:
            table = table.rename_columns(self.spec.schema.names).cast(self.spec.schema)
        return self._check_output(table)

    def _receive(self, ctx: SessionContext, receive) -> None:
        tables = self.mailboxes.receive(self.request_id, receive.stage, self.worker.index,
                                        self.senders[receive.stage], self.deadline)  # fmt: skip
        if receive.merge_sql is not None:  # single-stage states, one row per server
            states = pa.concat_tables(tables) if tables else STATE_SCHEMA.empty_table()
            table = self._merge(receive, states)
        else:
            table = pa.concat_tables([t.cast(receive.schema) for t in tables]) if tables \
                else receive.schema.empty_table()  # fmt: skip
        table = self._check_input(receive, table)
        self.stats.input_rows += table.num_rows
        self.inputs[receive.table] = table
        _register(ctx, receive.table, table)

    def _read_leaf(self, ctx: SessionContext, i: int, leaf, keys: list) -> None:
        table, leaf_stats = self.leaf_reader(leaf, self.worker.segments, self.deadline, keys)
        self.stats.leaf = _add(self.stats.leaf, leaf_stats)
        self.stats.tables.append(leaf.table)
        self.stats.input_rows += table.num_rows
        self.inputs[f"$leaf{i}"] = table
        _register(ctx, f"$leaf{i}", table)

    def _keys(self, ctx: SessionContext, dynamic, sides: dict[str, pa.Table]) -> pa.Array:
        """A dynamic filter's keys: the keys of the join's other side (repeats kept), from
        the star join's dimension rows when it is one of them."""
        side = sides.get(dynamic.build)
        column = (side.column(dynamic.key).drop_null() if side is not None
                  else self._query(ctx, dynamic.sql).column(0))  # fmt: skip
        return column.combine_chunks() if column.num_chunks else pa.array([], column.type)

    def _query(self, ctx: SessionContext, sql: str) -> pa.Table:
        try:
            return ctx.sql(sql).to_arrow_table()
        except Exception as exc:
            raise classify(exc, sql) from exc

    def _star(self, ctx: SessionContext, star, sides: dict[str, pa.Table]) -> dict | None:
        """Registers the star's joined rows as ``$star`` and returns the dictionaries of its
        coded group keys; None when a dimension's keys repeat (the stage's SQL then runs
        its hash joins)."""
        fact = self.inputs.get(star.fact_input) if star.fact_input else None
        if fact is None:
            fact = self._query(ctx, star.fact_sql)
        dimensions = [sides[d.sql] for d in star.dimensions]
        coded = dictionaries(star, dimensions)
        joined = join_star(star, fact, dimensions, coded)
        if joined is None:
            return None
        _register(ctx, "$star", joined)
        return coded

    def _merge(self, receive, table: pa.Table) -> pa.Table:
        columns = {k: ColumnInfo(v[0], v[1]) for k, v in receive.merge_columns.items()}
        plan = compile_query(receive.merge_sql, columns)
        plan = dataclasses.replace(plan, options=receive.merge_options or {})
        return merge(plan, table, receive.schema)

    def _session(self) -> SessionContext:
        config = SessionConfig().with_target_partitions(1)  # more for big inputs (_execute)
        runtime = RuntimeEnvBuilder().with_fair_spill_pool(self.limits.memory_bytes)
        ctx = SessionContext(config, runtime)
        register_builtins(ctx)
        for spec in self.spec.udfs:
            register_udf(ctx, spec)
        return ctx

    def _check_live(self) -> None:
        if self.mailboxes.cancelled(self.request_id):
            raise QueryCancelledError(f"Query {self.request_id} was cancelled")
        if time.monotonic() > self.deadline:
            raise QueryTimeoutError(f"Query timed out in stage {self.spec.id}")

    def _check_input(self, receive, table: pa.Table) -> pa.Table:
        if receive.single_row and table.num_rows > 1:
            raise QueryExecutionError(
                "More than one row returned by a subquery used as an expression"
            )
        if receive.build_side == "join" and table.num_rows > self.limits.max_rows_in_join:
            return self._over_limit(table, "join", self.limits.max_rows_in_join)
        if receive.build_side == "window" and table.num_rows > self.limits.max_rows_in_window:
            return self._over_limit(table, "window", self.limits.max_rows_in_window)
        return table

    def _over_limit(self, table: pa.Table, what: str, limit: int) -> pa.Table:
        mode = self.limits.join_overflow if what == "join" else self.limits.window_overflow
        if mode == "BREAK":
            self.stats.flags["maxRowsInJoinReached" if what == "join" else
                             "maxRowsInWindowReached"] = True  # fmt: skip
            return table.slice(0, limit)
        if what == "join":
            raise ResourceLimitError(
                "Cannot build in memory hash table for join operator, reached number of rows "
                f"limit: {limit}"
            )
        raise ResourceLimitError(
            f"Cannot process window operator, reached number of rows limit: {limit}"
        )

    def _check_output(self, table: pa.Table) -> pa.Table:
        if "Aggregate" in self.spec.operators and table.num_rows > self.limits.num_groups:
            if self.limits.error_on_num_groups:
                raise ResourceLimitError("NUM_GROUPS_LIMIT has been reached")
            self.stats.flags["numGroupsLimitReached"] = True
        if "Join" in self.spec.operators and table.num_rows > self.limits.max_rows_in_join:
            return self._over_limit(table, "join", self.limits.max_rows_in_join)
        return table

    # --- output -----------------------------------------------------------------------------
    def _send(self, table: pa.Table) -> None:
        receivers = self.spec.receivers
        if self.spec.distribution == "hash":
            parts = partition(table, self.spec.keys, len(receivers))
        elif self.spec.distribution == "broadcast":
            parts = [table] * len(receivers)
        elif self.spec.distribution == "partitioned":  # 1:1, to the same partition's worker
            index = self.worker.index
            self.client.send(receivers[index], self.request_id, self.spec.id, index, index,
                             table, self.deadline)  # fmt: skip
            return
        else:  # singleton (one receiver) or random
            parts = [table] + [table.slice(0, 0)] * (len(receivers) - 1)
        for worker, (address, part) in enumerate(zip(receivers, parts, strict=True)):
            self.client.send(address, self.request_id, self.spec.id, worker, self.worker.index,
                             part, self.deadline)  # fmt: skip

    def _fail(self, error: QueryError) -> None:
        for worker, address in enumerate(self.spec.receivers or []):
            with contextlib.suppress(Exception):  # a receiver gone: the broker cancels
                self.client.send_error(address, self.request_id, self.spec.id, worker,
                                       self.worker.index, error.message, error.error_code,
                                       self.deadline)  # fmt: skip


def _register(ctx: SessionContext, name: str, table: pa.Table) -> None:
    batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    ctx.register_record_batches(name, [batches])


def _add(total: dict, more: dict) -> dict:
    out = dict(total)
    for k, v in more.items():
        out[k] = out.get(k, 0) + v
    return out
