"""A small LRU of compiled plans keyed on the SQL text, the query options and the schema
object, in front of ``engine.query.compile_query``: a repeated query costs one dict lookup
instead of rebuilding the cache key from every column of the schema."""

from __future__ import annotations

import threading
from collections import OrderedDict

from engine.query.plan import QueryPlan
from engine.query.runner import compile_query


class PlanCache:
    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._plans: OrderedDict[tuple, tuple[object, QueryPlan]] = OrderedDict()
        self._lock = threading.Lock()

    def compile(self, sql: str, schema, options: dict[str, str]) -> QueryPlan:
        """The plan of ``sql`` (see ``compile_query``); raises QueryError subclasses."""
        key = (sql, tuple(sorted(options.items())), id(schema))
        with self._lock:
            hit = self._plans.get(key)
            # the schema object is kept with the plan, so its id cannot be reused meanwhile
            if hit is not None and hit[0] is schema:
                self._plans.move_to_end(key)
                return hit[1]
        plan = compile_query(sql, schema, options=options)
        with self._lock:
            self._plans[key] = (schema, plan)
            if len(self._plans) > self.size:
                self._plans.popitem(last=False)
        return plan
