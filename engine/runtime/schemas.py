"""Table schemas read from ZooKeeper (``PROPERTYSTORE/SCHEMAS``) and cached until their znode
changes (a one-shot watch drops the entry), so a query costs no ZooKeeper round trip.

A missing schema is cached too, with an ``exists`` watch that fires when it is created (a
``get`` of a missing znode sets no watch). A watch that fires while a read is under way
bumps the table's generation, and the read's answer is then used once but not kept: it
may predate the change."""

from __future__ import annotations

import logging
import threading

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from engine.clusterstate import (
    OFFLINE,
    REALTIME,
    ClusterStateError,
    ClusterStore,
    ZNRecord,
    ZooKeeperUnavailableError,
    schema_from_record,
    table_name_with_type,
)
from engine.common.errors import ConfigError
from engine.spi import Schema, TableConfig

log = logging.getLogger(__name__)


class SchemaCache:
    def __init__(self, store: ClusterStore, *, timeout_s: float = 2.0) -> None:
        self.store = store
        self.timeout_s = timeout_s
        self._schemas: dict[str, Schema | None] = {}
        self._generations: dict[str, int] = {}
        self._table_nulls: dict[str, bool] = {}  # raw table -> a config has nullHandlingEnabled
        self._lock = threading.Lock()

    def get(self, raw_table: str) -> Schema | None:
        """The schema of ``raw_table`` (named after the table, or the table config's
        ``segmentsConfig.schemaName``); None when ZooKeeper has none or cannot be reached.
        Never blocks on a disconnected ZooKeeper: a query must not wait for it."""
        with self._lock:
            if raw_table in self._schemas:
                return self._schemas[raw_table]
            generation = self._generations.get(raw_table, 0)
        try:
            schema = self._load(raw_table)
        except (ZooKeeperUnavailableError, KazooException, KazooTimeoutError) as exc:
            log.warning("cannot read the schema of %s now: %s", raw_table, exc)
            return None  # not cached: the next query tries again
        with self._lock:
            if self._generations.get(raw_table, 0) == generation:
                self._schemas[raw_table] = schema
        return schema

    def nullable_columns(self, raw_table: str) -> frozenset[str]:
        """The columns of ``raw_table`` whose nulls are stored (``Schema.nullable_columns``
        with the table configs' ``nullHandlingEnabled``): a column added to the schema reads
        as NULL there in older segments."""
        schema = self.get(raw_table)
        if schema is None:
            return frozenset()
        return schema.nullable_columns(self._table_nulls.get(raw_table, False))

    def invalidate(self, raw_table: str | None = None) -> None:
        with self._lock:
            tables = list(self._schemas) if raw_table is None else [raw_table]
            for table in {*tables, *([] if raw_table else self._generations)}:
                self._generations[table] = self._generations.get(table, 0) + 1
                self._schemas.pop(table, None)

    def _load(self, raw_table: str) -> Schema | None:
        client = self.store.client
        for name in self._schema_names(raw_table):
            if not client.connected:
                raise ZooKeeperUnavailableError("ZooKeeper is not connected")
            path = self.store.paths.schema(name)
            watch = lambda _e, t=raw_table: self.invalidate(t)  # noqa: E731
            try:
                data, _ = client.get_async(path, watch=watch).get(timeout=self.timeout_s)
            except NoNodeError:
                # no watch was set: ask to hear of the znode's creation (a creation between
                # the get and this exists is seen by the exists itself, and then reread)
                if client.exists_async(path, watch=watch).get(timeout=self.timeout_s):
                    return self._load(raw_table)
                continue
            try:
                return Schema.from_json(schema_from_record(ZNRecord.from_bytes(data, where=path)))
            except (ClusterStateError, ConfigError) as exc:
                log.error("schema %s in ZooKeeper is invalid: %s", name, exc)
                return None
        # none yet: a table config created or changed later may name a schema
        for table_type in (OFFLINE, REALTIME):
            config_path = self.store.paths.table_config(table_name_with_type(raw_table, table_type))
            client.exists_async(config_path, watch=watch).get(timeout=self.timeout_s)
        return None

    def _schema_names(self, raw_table: str) -> list[str]:
        names = [raw_table]
        null_handling = False
        for table_type in (OFFLINE, REALTIME):
            try:
                config = self.store.table_config(table_name_with_type(raw_table, table_type))
            except ZooKeeperUnavailableError:
                raise
            except ClusterStateError:
                continue
            if config is None:
                continue
            try:
                parsed = TableConfig.from_json(config)
            except ConfigError as exc:
                log.warning("table config %s_%s is invalid: %s", raw_table, table_type, exc)
                continue
            name = parsed.segments_config.schema_name
            null_handling = null_handling or parsed.index_config.null_handling_enabled
            if name and name not in names:
                names.append(name)
        with self._lock:
            self._table_nulls[raw_table] = null_handling
        return names
