"""One CONSUMING segment on a server, from its ZooKeeper metadata to ONLINE.

The server creates a ``ConsumingSegment`` on the OFFLINE -> CONSUMING transition and calls
``start()``; queries read ``snapshot()``. On CONSUMING -> ONLINE it calls ``go_online`` with
the committed end offset and a way to download the committed copy, and loads the directory it
gets back. As in Pinot:

- COMMITTED (this replica built and uploaded it) or RETAINED (kept its own build): use it;
- DISCARDED or ERROR: download;
- otherwise compare with the committed end offset: ahead -> download; equal -> build;
  behind -> catch up, then build (download if it cannot within ``catch_up_ms``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from engine.clusterstate.realtime_metadata import FLUSH_THRESHOLD_SIZE, START_OFFSET
from engine.realtime.completion import CompletionClient
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.llc_name import LLCSegmentName
from engine.realtime.mutable_segment import MutableSegment
from engine.realtime.partition_consumer import PartitionConsumer
from engine.stream.config import table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider, KafkaPartitionConsumer

log = logging.getLogger(__name__)
CATCH_UP_MS = 31_000  # Pinot's MAX_TIME_FOR_CONSUMING_TO_ONLINE_IN_SECONDS


class ConsumingSegment:
    """``zk`` is the segment's ZK metadata (``engine.clusterstate.SegmentZKMetadata``);
    ``consumer_factory(stream, partition, client_id)`` makes the Kafka consumer (a real
    ``KafkaPartitionConsumer`` by default)."""

    def __init__(self, table_config, schema, zk, *, instance_id: str,
                 completion: CompletionClient, build_dir: str | Path,
                 consumer_factory: Callable = KafkaPartitionConsumer, metadata=None,
                 **consumer_options):  # fmt: skip
        name = LLCSegmentName.parse(zk.segment_name)
        if name is None:
            raise ValueError(f"{zk.segment_name} is not an LLC segment name")
        self.name = zk.segment_name
        self.stream = table_stream_configs(table_config)[0]
        self._client_id = f"{instance_id}-{self.name}"
        self._factory = consumer_factory
        self.partition = name.partition
        self.segment = MutableSegment(self.name, schema, table_config)
        self.consumer = PartitionConsumer(
            segment=self.segment, stream=self.stream, partition=name.partition,
            start_offset=int(zk.extra[START_OFFSET]),
            row_limit=int(zk.extra.get(FLUSH_THRESHOLD_SIZE) or self.stream.flush.rows or 1),
            completion=completion,
            consumer=consumer_factory(self.stream, name.partition, self._client_id),
            metadata=metadata or KafkaMetadataProvider(self.stream, self._client_id),
            build_dir=build_dir, created_ms=zk.creation_time_ms or None, **consumer_options,
        )  # fmt: skip
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.consumer.run, name=f"consume-{self.name}", daemon=True
        )
        self._thread.start()

    def snapshot(self):
        return self.segment.snapshot()

    def force_commit(self) -> None:
        self.consumer.force_commit()

    def stop(self, timeout_s: float = 30.0) -> None:
        self.consumer.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def go_online(self, end_offset: int, download: Callable[[], Path],
                  catch_up_ms: int = CATCH_UP_MS) -> Path:  # fmt: skip
        """The directory of the segment to load as ONLINE at the committed ``end_offset``."""
        self.stop()
        pc = self.consumer
        if pc.state in (ConsumerState.COMMITTED, ConsumerState.RETAINED) and pc.built:
            return pc.built.path
        if pc.state in (ConsumerState.DISCARDED, ConsumerState.ERROR):
            return download()
        end = int(end_offset)
        if pc.current_offset > end:
            log.info("segment %s: at %d, past the committed %d: downloading", self.name,
                     pc.current_offset, end)  # fmt: skip
            return download()
        if pc.current_offset == end:
            built = pc.build_now()
        else:
            fresh = self._factory(self.stream, self.partition, self._client_id)
            built = pc.catch_up_and_build(end, fresh, catch_up_ms)
        return pc.built.path if built and pc.built else download()
