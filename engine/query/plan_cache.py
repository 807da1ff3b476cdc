"""Compiled plans, cached: sqlglot parsing costs far more than running a small query, so a
repeated query must not parse again.

Three LRUs (cachetools' ``LRUCache``, as ``engine.common.lru.HitLRU``), each ``size`` entries:
by (SQL, options, schema object), so a repeated query against the same schema costs one dict
lookup; by (SQL, columns, options), so a schema read
anew with the same columns still hits; and the parsed SQL by its text, so only planning runs
when the columns change.
"""

from __future__ import annotations

import dataclasses
import threading

from engine.common.lru import HitLRU
from engine.query.parser import parse_sql
from engine.query.plan import QueryPlan, build_plan, columns_from_schema

DEFAULT_SIZE = 1024


class PlanCache:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError(f"a plan cache needs room for at least one plan, got size={size}")
        self.size = size
        self._by_schema: HitLRU = HitLRU(size)  # -> (schema, plan)
        self._by_columns: HitLRU = HitLRU(size)  # -> plan
        self._parsed: HitLRU = HitLRU(size)  # SQL -> parsed
        self._lock = threading.Lock()  # servers and brokers compile from many request threads

    def compile(self, sql: str, schema=None, options: dict | None = None) -> QueryPlan:
        """The plan of ``sql``. ``schema``: an ``engine.spi.schema.Schema`` or a dict of
        ``ColumnInfo``; with it unknown columns are rejected (710). ``options`` override the
        query's own ``SET`` options. Raises QueryError subclasses."""
        option_key = tuple(sorted((options or {}).items()))
        fast_key = (sql, option_key, id(schema))
        hit = self._get(self._by_schema, fast_key)
        # the schema object is kept with the plan, so its id cannot be reused meanwhile
        if hit is not None and hit[0] is schema:
            return hit[1]
        columns = columns_from_schema(schema)
        key = (sql, tuple(sorted(columns.items())), option_key)
        plan = self._get(self._by_columns, key)
        if plan is None:
            parsed = self._get(self._parsed, sql)
            if parsed is None:
                parsed = parse_sql(sql)
                self._put(self._parsed, sql, parsed)
            plan = build_plan(parsed, sql, columns)
            if options:
                plan = dataclasses.replace(
                    plan, options={**plan.options, **{k: str(v) for k, v in options.items()}}
                )
            self._put(self._by_columns, key, plan)
        self._put(self._by_schema, fast_key, (schema, plan))
        return plan

    def _get(self, cache: HitLRU, key):
        """The entry (now the most recently used), or None."""
        with self._lock:
            return cache[key]  # None when absent

    def _put(self, cache: HitLRU, key, value) -> None:
        with self._lock:
            cache[key] = value  # evicts the least recently used
