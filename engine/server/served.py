"""What queries read: resource -> segment name -> the loaded segment served. Replaced as a
whole (never mutated) on every change, so query threads read it without a lock while the
worker loop loads and drops segments."""

from __future__ import annotations

from collections.abc import Mapping

from engine.segment import ImmutableSegment


class ServedSegments:
    def __init__(self) -> None:
        self._tables: dict[str, dict[str, ImmutableSegment]] = {}

    def table(self, resource: str) -> Mapping[str, ImmutableSegment]:
        return self._tables.get(resource, {})

    def put(self, resource: str, name: str, segment: ImmutableSegment | None) -> None:
        """Serve ``segment`` as ``name`` of ``resource`` (None: serve none); worker loop only."""
        table = dict(self._tables.get(resource, {}))
        if segment is None:
            table.pop(name, None)
        else:
            table[name] = segment
        tables = dict(self._tables)
        if table:
            tables[resource] = table
        else:
            tables.pop(resource, None)
        self._tables = tables
