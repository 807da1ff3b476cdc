"""Compiled multi-stage queries, cached by their text and options: planning (sqlglot
parsing, binding, DataFusion's typing of every node, rendering each stage's SQL) costs tens
of milliseconds, more than running a selective query, and Pinot's users complain of it
(apache/pinot#15064). A hit costs one catalog lookup per table the query named.

An entry keeps what the planner read from the catalog; it serves a query only while the
catalog still answers the same for each of those names (columns, types, partitioning,
primary keys, nullability, whether the table is a dimension), so a schema or table config
change plans anew. Row counts are compared by the size class the planner decides on
(``engine.multistage.stages.size_class``): a growing real-time table keeps its plan until it
outgrows a broadcast.
"""

from __future__ import annotations

import dataclasses
import threading

from cachetools import LRUCache

from engine.multistage.compiler import CompiledQuery, compile_request
from engine.multistage.fragment import Fragmenter, StageSpec
from engine.multistage.logical import TableInfo
from engine.multistage.stages import size_class

DEFAULT_SIZE = 256


@dataclasses.dataclass(frozen=True)
class Planned:
    compiled: CompiledQuery
    stages: list[StageSpec]  # templates without workers (``engine.multistage.fragment.place``)
    read: dict[str, TableInfo | None]  # what the planner read from the catalog
    exchange_stages: dict[int, int]  # id() of each Exchange of compiled.physical -> its stage


class PlanCache:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self._entries: LRUCache = LRUCache(size)
        self._lock = threading.Lock()

    def plan(self, sql: str, options: dict[str, str] | None, catalog) -> Planned:
        """The compiled query and its stage templates; ``catalog(name)`` -> TableInfo or
        None. Raises the planner's QueryErrors (nothing is kept then)."""
        key = (sql, tuple(sorted((options or {}).items())))
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and all(_same(catalog(name), info)
                                     for name, info in entry.read.items()):  # fmt: skip
            return entry
        read: dict[str, TableInfo | None] = {}

        def recording(name: str) -> TableInfo | None:
            read[name] = info = catalog(name)
            return info

        compiled = compile_request(sql, options, recording)
        fragmenter = Fragmenter(compiled.typing)
        stages = fragmenter.cut(compiled.physical)
        entry = Planned(compiled, stages, read, dict(fragmenter.stage_of_exchange))
        with self._lock:
            self._entries[key] = entry
        return entry


def _same(now: TableInfo | None, then: TableInfo | None) -> bool:
    if now is None or then is None:
        return now is then
    return now == dataclasses.replace(then, num_docs=now.num_docs) and \
        size_class(now.num_docs) == size_class(then.num_docs)  # fmt: skip
