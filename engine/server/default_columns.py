"""Columns a table's schema gained since a segment was built (Pinot's default columns): written
into a segment's directory before it loads, and what ``needReload`` reports."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from engine.runtime import SchemaCache
from engine.segment import ImmutableSegment, read_metadata
from engine.segment.default_column import columns_to_generate, materialize
from engine.spi.table_name import split_table_name

log = logging.getLogger(__name__)


class DefaultColumns:
    """``schemas``: the tables' schemas (None: segments are loaded as they were built)."""

    def __init__(self, schemas: SchemaCache | None) -> None:
        self._schemas = schemas

    def schema_changed(self, resource: str) -> None:
        """Read ``resource``'s schema again (a reload follows a schema change)."""
        if self._schemas is not None:
            self._schemas.invalidate(split_table_name(resource)[0])

    def write(self, resource: str, seg_dir: Path) -> None:
        """Write the columns the table's schema has and the segment lacks (or holds stale)."""
        if self._schemas is None:
            return
        raw = split_table_name(resource)[0]
        schema = self._schemas.get(raw)
        if schema is None:
            return
        specs = columns_to_generate(read_metadata(seg_dir), schema)
        if specs:
            materialize(seg_dir, specs, self._schemas.nullable_columns(raw))
            log.info("segment %s/%s: wrote default columns %s", resource, seg_dir.name,
                     ", ".join(s.name for s in specs))  # fmt: skip

    def missing(self, resource: str, segments: Iterable[ImmutableSegment]) -> bool:
        """Whether one of ``segments`` lacks a column of the current schema (or holds a stale
        auto-generated one): Pinot's needReload."""
        schema = self._schemas.get(split_table_name(resource)[0]) if self._schemas else None
        if schema is None:
            return False
        return any(columns_to_generate(segment.metadata, schema) for segment in segments)
