"""The upsert and dedup tables a server hosts: one ``engine.upsert.TableMetadata`` each, made
when the table's first segment loads or consumes here (its table config and schema read from
ZooKeeper then; the servers read these keys at table start, as Pinot's do, and an update that
changes them is refused without ``force=true``).

Settings (Pinot's ``pinot.server.instance.upsert.default.*``): ``SPRIG_UPSERT_DEFAULT_SNAPSHOT``
and ``SPRIG_UPSERT_DEFAULT_PRELOAD`` say what ``snapshot``/``preload: DEFAULT`` mean here
(false, false).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from engine.clusterstate import ClusterStore
from engine.common.errors import ConfigError
from engine.realtime.llc_name import LLCSegmentName
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from engine.upsert import ServerDefaults, TableMetadata

log = logging.getLogger(__name__)
# UpsertCompactMergeTask's output names: compacted__<table>__<partition>__<time>__<suffix>
_COMPACTED = re.compile(r"^compacted__.+?__(\d+)__")


def defaults_from_env(environ=os.environ) -> ServerDefaults:
    def flag(name: str) -> bool:
        return str(environ.get(name, "false")).lower() == "true"

    return ServerDefaults(
        flag("SPRIG_UPSERT_DEFAULT_SNAPSHOT"), flag("SPRIG_UPSERT_DEFAULT_PRELOAD")
    )


class UpsertTables:
    def __init__(self, data_dir: Path, store_of: Callable[[], ClusterStore],
                 schema_of: Callable[[str], Schema | None],
                 defaults: ServerDefaults | None = None) -> None:  # fmt: skip
        self.data_dir = Path(data_dir)
        self._store_of = store_of
        self._schema_of = schema_of
        self.defaults = defaults or defaults_from_env()
        self._tables: dict[str, TableMetadata | None] = {}
        self._lock = threading.Lock()

    def known(self, resource: str) -> TableMetadata | None:
        """The table's metadata if it upserts or dedups and has a segment here (no
        ZooKeeper read: for queries)."""
        return self._tables.get(resource)

    def tables(self) -> dict[str, TableMetadata]:
        return {name: meta for name, meta in self._tables.items() if meta is not None}

    def of(self, resource: str) -> TableMetadata | None:
        """The table's metadata, made on first use; None for other tables. Raises
        ZooKeeperUnavailableError while ZooKeeper is down."""
        with self._lock:
            if resource in self._tables:
                return self._tables[resource]
            raw = self._store_of().table_config(resource)
            if raw is None:
                return None
            try:
                config = TableConfig.from_json(raw)
            except ConfigError as exc:
                log.error("table config of %s is unreadable: %s", resource, exc)
                return None
            if "upsertConfig" not in raw and "dedupConfig" not in raw:
                self._tables[resource] = None
                return None
            schema = self._schema_of(config.table_name)
            if schema is None:
                return None  # not cached: the schema may come
            try:
                meta = TableMetadata(config, schema, table_dir=self.data_dir / resource,
                                     defaults=self.defaults)  # fmt: skip
            except ValueError:  # mode NONE / dedupEnabled false
                meta = None
            self._tables[resource] = meta
            return meta

    def add_loaded(self, resource: str, name: str, segment, creation_ms: int,
                   publish: Callable[[], None]) -> str | None:  # fmt: skip
        """A loaded segment enters its table's metadata and ``publish`` swaps it in while the
        partition is locked (engine.upsert); a table without upsert or dedup publishes at
        once. The error text when the metadata cannot take it, else None."""
        table = self.of(resource)
        if table is None:
            publish()
            return None
        partition, sequence = segment_identity(name, segment)
        try:
            table.add_segment(name, segment, partition=partition, sequence=sequence,
                              creation_ms=creation_ms, on_publish=publish)  # fmt: skip
        except Exception as exc:  # a bug here must not stop the server's worker loop
            log.exception("segment %s/%s: upsert metadata refused it", resource, name)
            return f"upsert metadata: {exc}"
        return None

    def remove_segment(self, resource: str, name: str) -> None:
        """The segment no longer serves here: its keys leave the table's metadata."""
        table = self.known(resource)
        if table is not None:
            table.remove_segment(name)

    def forget(self, resource: str) -> None:
        with self._lock:
            self._tables.pop(resource, None)


def segment_identity(name: str, segment=None) -> tuple[int, int | None]:
    """(stream partition, LLC sequence or None) of a segment: from an LLC name, a
    compacted-merge name, else the partition its metadata records (else 0)."""
    llc = LLCSegmentName.parse(name)
    if llc is not None:
        return llc.partition, llc.sequence
    found = _COMPACTED.match(name)
    if found:
        return int(found.group(1)), None
    metadata = getattr(segment, "metadata", None)
    for column in getattr(metadata, "columns", {}).values() if metadata is not None else ():
        partitions = getattr(column, "partitions", None)
        if partitions:
            return int(sorted(partitions)[0]), None
    return 0, None
