"""Consuming segments on a server: one ``PartitionConsumer`` thread per CONSUMING LLC segment.

On the OFFLINE -> CONSUMING transition the segment's consumer starts from its ZK start offset
(``segment.realtime.startOffset``) with its row target (``segment.flush.threshold.size``), so
a server restarted mid-segment consumes the same messages again: nothing lost, nothing twice.
Queries read the mutable segment's snapshot until the immutable segment replaces it. The
consumer runs the completion protocol with the lead controller by itself; the committer and
a KEEP replica keep their build, which the CONSUMING -> ONLINE transition moves to the
segment's local directory and loads when its CRC matches ZooKeeper's (else it downloads).

The ZK keys below are the controller's (``cluster.logic.realtime.llc_metadata``); the engine
may not import the controller, so the three read-side names are repeated here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from engine.clusterstate import ClusterStore, ZooKeeperUnavailableError
from engine.clusterstate.realtime_metadata import END_OFFSET, FLUSH_THRESHOLD_SIZE, START_OFFSET
from engine.common import clock
from engine.common.errors import EngineError
from engine.common.names import InvalidNameError, child_path
from engine.realtime import MutableSegment
from engine.realtime.completion import HttpCompletionClient
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.consuming_info import segment_consumer_info
from engine.realtime.llc_name import LLCSegmentName
from engine.realtime.partition_consumer import PartitionConsumer
from engine.realtime.stall import DEFAULT_STALL_S
from engine.server.errors import SegmentLoadError
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig
from engine.stream.config import table_stream_configs
from engine.stream.errors import StreamError
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

log = logging.getLogger(__name__)
# a DISCARDED replica was told its rows differ; an ERROR one may hold a partial segment
_NO_LOCAL_BUILD = frozenset({ConsumerState.DISCARDED, ConsumerState.ERROR})
STOP_WAIT_S = 60.0  # a consumer stopped mid-commit finishes its HTTP calls first


@dataclasses.dataclass
class ConsumingSegment:
    resource: str
    name: str
    consumer: PartitionConsumer
    thread: threading.Thread
    metadata: KafkaMetadataProvider  # the partition's latest offset, for lags


class RealtimeSegmentManager:
    """The consuming segments of one server. ``store_of`` returns the ClusterStore (raises
    ZooKeeperUnavailableError while ZooKeeper is down) and ``schema_of(raw_table)`` the table's
    schema or None. Only the worker loop starts and stops; query threads call ``snapshot``."""

    def __init__(self, instance_id: str, data_dir: Path, store_of: Callable[[], ClusterStore],
                 schema_of: Callable[[str], Schema | None], stall_s: float = DEFAULT_STALL_S, *,
                 controller_scheme: str = "http",
                 completion_headers: dict[str, str] | None = None) -> None:  # fmt: skip
        self.instance_id = instance_id
        self.stall_s = stall_s
        self.data_dir = Path(data_dir)
        self._store_of = store_of
        self._schema_of = schema_of
        self._consuming: dict[tuple[str, str], ConsumingSegment] = {}
        # (table, partition) -> [rows indexed, rows malformed, rows filtered, stalls] of the
        # segments this process finished consuming, so totals never go back when one is replaced
        self._finished: dict[tuple[str, int], list[int]] = {}
        self._controller_scheme = controller_scheme  # pinot.server.segment.uploader.protocol
        self._completion = HttpCompletionClient(
            instance_id, self.controller_url, headers=completion_headers
        )
        # FORCE_COMMIT for segments whose consumer was not started when it came
        self._force_pending: set[tuple[str, str]] = set()
        self.upsert = None  # engine.server.upsert_tables.UpsertTables (None: no upsert)

    # --- reads (any thread) ----------------------------------------------------------------
    def snapshot(self, resource: str, name: str):
        entry = self._consuming.get((resource, name))
        return None if entry is None else entry.consumer.segment.snapshot()

    def consuming_info(self, resource: str) -> list[dict]:
        """Pinot's SegmentConsumerInfo of each segment of ``resource`` consumed here, with
        the lags against the partition's latest offset (NOT_CALCULATED when the stream does
        not answer)."""
        out = []
        for (table, _name), entry in sorted(self._consuming.items()):
            if table != resource:
                continue
            try:
                latest = entry.metadata.latest_offset(entry.consumer.partition, timeout_ms=2000)
            except StreamError:
                latest = None
            out.append(segment_consumer_info(entry.consumer, latest))
        return out

    def ingestion_totals(self, now_ms: int | None = None) -> dict[tuple[str, int], dict]:
        """(table, partition) -> rows consumed, malformed and filtered and stalls detected
        since this process started, whether it is stalled now, and the ingestion delay: ms
        since the newest consumed message was produced (None before the first message)."""
        now = clock.now_ms() if now_ms is None else now_ms
        totals = {key: {"consumed": c, "malformed": m, "filtered": f, "stalls": s,
                        "stalled": False, "delay_ms": None}
                  for key, (c, m, f, s) in self._finished.items()}  # fmt: skip
        for (table, _name), entry in list(self._consuming.items()):
            stats, stall = entry.consumer.stats, entry.consumer.stall
            out = totals.setdefault(
                (table, entry.consumer.partition),
                {"consumed": 0, "malformed": 0, "filtered": 0, "stalls": 0, "stalled": False,
                 "delay_ms": None},
            )  # fmt: skip
            out["consumed"] += stats.rows_indexed
            out["malformed"] += stats.rows_malformed
            out["filtered"] += stats.rows_filtered
            out["stalls"] += stall.stalls
            out["stalled"] = out["stalled"] or stall.stalled
            if stats.last_message_time_ms is not None:
                out["delay_ms"] = max(0, now - stats.last_message_time_ms)
        return totals

    def controller_url(self) -> str | None:
        """The lead controller's base URL, looked up on every call so a new leader is found
        after a NOT_LEADER answer or a failover."""
        try:
            store = self._store_of()
            leader = store.controller_leader()
            config = store.instance_config(leader) if leader else None
        except ZooKeeperUnavailableError:
            return None
        if config is None:
            return None
        return f"{self._controller_scheme}://{config.host}:{config.port}"

    # --- messages (worker loop only) -------------------------------------------------------
    def force_commit(self, resource: str, names: list[str]) -> list[str]:
        """End consumption of the named consuming segments now (the controller's FORCE_COMMIT
        message); they commit through the completion protocol with reason
        ``forceCommitMessageReceived``. A named segment whose consumer has not started yet
        is remembered and commits as soon as it starts. Returns the segments told now."""
        told = []
        for name in names:
            entry = self._consuming.get((resource, name))
            if entry is None:
                self._force_pending.add((resource, name))
                continue
            entry.consumer.force_commit()
            told.append(name)
        return told

    # --- transitions (worker loop only) ----------------------------------------------------
    def start(self, resource: str, name: str) -> None:
        """Start consuming ``name`` from its ZK start offset; SegmentLoadError when its
        metadata, table config, schema or stream config cannot be used."""
        if (resource, name) in self._consuming:
            return
        llc = LLCSegmentName.parse(name)
        if llc is None:
            raise SegmentLoadError(f"{name} is CONSUMING but is not an LLC segment name")
        store = self._store_of()
        meta = store.segment_metadata(resource, name)
        if meta is None or START_OFFSET not in meta.extra:
            raise SegmentLoadError(f"no consuming metadata in ZooKeeper for {resource}/{name}")
        raw_config = store.table_config(resource)
        if raw_config is None:
            raise SegmentLoadError(f"no table config in ZooKeeper for {resource}")
        try:
            config = TableConfig.from_json(raw_config)
            schema = self._schema_of(config.table_name)
            if schema is None:
                raise SegmentLoadError(f"no schema in ZooKeeper for {config.table_name}")
            stream = table_stream_configs(config)[0]
            segment = MutableSegment(name, schema, config)
            client_id = f"{self.instance_id}-{name}"
            metadata = KafkaMetadataProvider(stream, f"{client_id}-metadata")
            consumer = PartitionConsumer(
                segment=segment, stream=stream, partition=llc.partition,
                start_offset=int(meta.extra[START_OFFSET]),
                row_limit=int(meta.extra.get(FLUSH_THRESHOLD_SIZE) or stream.flush.rows or 5_000_000),
                completion=self._completion,
                consumer=KafkaPartitionConsumer(stream, llc.partition, client_id),
                metadata=metadata,
                build_dir=self._build_dir(resource, name),
                created_ms=meta.creation_time_ms or None,
                stall_ms=self.stall_s * 1000,
                new_consumer=lambda: KafkaPartitionConsumer(stream, llc.partition, client_id),
            )  # fmt: skip
        except SegmentLoadError:
            raise
        except (EngineError, ValueError, KeyError) as exc:
            raise SegmentLoadError(f"cannot consume {resource}/{name}: {exc}") from exc
        table = self.upsert.of(resource) if self.upsert is not None else None
        if table is not None:  # its rows go through the partition's primary-key metadata
            table.start_consuming(name, segment, partition=llc.partition, sequence=llc.sequence,
                                  creation_ms=meta.creation_time_ms)  # fmt: skip
        if (resource, name) in self._force_pending:
            self._force_pending.discard((resource, name))
            consumer.force_commit()
        thread = threading.Thread(target=consumer.run, name=f"consume-{name}", daemon=True)
        self._consuming[(resource, name)] = ConsumingSegment(
            resource, name, consumer, thread, metadata
        )
        thread.start()
        log.info("segment %s/%s CONSUMING partition %d from offset %d (row target %d)",
                 resource, name, llc.partition, consumer.start_offset, consumer.row_limit)  # fmt: skip

    def stop(self, resource: str, name: str) -> PartitionConsumer | None:
        """Stop the consumer and wait for its thread (a commit in flight completes); its
        snapshot is still served until ``forget``."""
        entry = self._consuming.get((resource, name))
        if entry is None:
            return None
        entry.consumer.stop()
        entry.thread.join(STOP_WAIT_S)
        if entry.thread.is_alive():
            log.warning("consumer of %s/%s did not stop within %.0f s", resource, name,
                        STOP_WAIT_S)  # fmt: skip
        return entry.consumer

    def finish(self, resource: str, name: str, segment_dir: Path) -> None:
        """CONSUMING -> ONLINE: stop the consumer; a build it completed (COMMITTED or
        RETAINED) becomes the segment's local copy at ``segment_dir``, which the load then
        uses if its CRC is ZooKeeper's (anything else is downloaded). A replica that was
        still holding at exactly the committed end offset builds its own copy first, as
        Pinot's does: the same rows in the same order give the same CRC."""
        consumer = self.stop(resource, name)
        built = None if consumer is None else consumer.built
        if built is None and consumer is not None and consumer.state not in _NO_LOCAL_BUILD:
            built = self._build_at_end_offset(resource, name, consumer)
        if built is not None and Path(built.path).is_dir():
            shutil.rmtree(segment_dir, ignore_errors=True)
            segment_dir.parent.mkdir(parents=True, exist_ok=True)
            os.replace(built.path, segment_dir)
        self._remove_build_dir(resource, name)

    def _build_at_end_offset(self, resource: str, name: str, consumer: PartitionConsumer):
        try:
            meta = self._store_of().segment_metadata(resource, name)
        except ZooKeeperUnavailableError:
            return None
        end = None if meta is None else meta.extra.get(END_OFFSET)
        if end is None or int(end) != consumer.current_offset:
            return None  # behind or ahead of the committed copy: download it
        try:
            return consumer.segment.build(
                self._build_dir(resource, name) / "own",
                custom_metadata={START_OFFSET: str(consumer.start_offset), END_OFFSET: end},
            )
        except (EngineError, OSError) as exc:
            log.warning("building %s/%s locally failed (%s); downloading it", resource, name,
                        exc)  # fmt: skip
            return None

    def forget(self, resource: str, name: str) -> None:
        self._force_pending.discard((resource, name))
        entry = self._consuming.pop((resource, name), None)
        if entry is not None:
            stats = entry.consumer.stats
            done = self._finished.setdefault((resource, entry.consumer.partition), [0, 0, 0, 0])
            done[0] += stats.rows_indexed
            done[1] += stats.rows_malformed
            done[2] += stats.rows_filtered
            done[3] += entry.consumer.stall.stalls
        self._remove_build_dir(resource, name)

    def _build_dir(self, resource: str, name: str) -> Path:
        # a dot directory: never taken for a segment's local copy; both names checked first
        return child_path(self.data_dir, resource, name).with_name(f".consuming-{name}")

    def _remove_build_dir(self, resource: str, name: str) -> None:
        try:
            path = self._build_dir(resource, name)
        except InvalidNameError:
            return  # a refused name never consumed, so never built anything
        shutil.rmtree(path, ignore_errors=True)
