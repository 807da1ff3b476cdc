"""The consuming loop of one partition's CONSUMING segment on one replica.

From the segment's start offset it fetches message batches, decodes them and indexes the rows
into the ``MutableSegment`` (queryable at once), until an end criteria: the segment's row
target, the flush time, a force-commit request, or (when catching up) the offset the
controller named. Then it follows the completion protocol (``engine.realtime.completion``)
with the controller until the segment is COMMITTED (this replica built and uploaded it,
``engine.realtime.committer``), RETAINED (it kept its own identical build), DISCARDED
(another replica's build is to be downloaded) or ERROR. Its state and counters are
``engine.realtime.consumer_state``.

Bad input never stops the partition: a malformed message is counted and skipped; an offset
Kafka no longer has is moved to per the stream's ``auto.offset.reset`` (counted and logged);
transient stream errors are retried; a consumer that stops moving while the partition grows
is recreated (``engine.realtime.stall``). Only a permanent stream error (the topic is gone,
access refused) stops consumption, and the controller is told with segmentStoppedConsuming.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine.common.clock import now_ms
from engine.common.errors import EngineError
from engine.realtime import completion as proto
from engine.realtime.committer import build_consumed, commit_built
from engine.realtime.consumer_state import DONE_STATES, ConsumerState, ConsumingStats
from engine.realtime.mutable_segment import MutableSegment
from engine.realtime.stall import DEFAULT_STALL_S, StallWatch
from engine.stream.config import StreamConfig
from engine.stream.decoders import MessageDecoder
from engine.stream.errors import (
    OffsetOutOfRangeError,
    PermanentStreamError,
    StreamError,
    TransientStreamError,
)
from engine.stream.kafka import METADATA_COLUMNS, with_message_metadata

log = logging.getLogger(__name__)
MAX_POLL_MS = 500  # the longest one fetch waits, so stop and force-commit act quickly
RETRY_MS = 1000  # back-off after a transient stream error
MIN_CONSUME_MS = 10 * 60_000  # a restarted replica past its time limit consumes this long
EMPTY_EXTENSION_MS = 3_600_000  # a segment with no message at its time limit waits this long


class PartitionConsumer:
    """Consumes one partition into ``segment`` from ``start_offset`` and completes it.

    ``consumer`` is a ``KafkaPartitionConsumer``-like object (``start``, ``fetch``, ``close``)
    and ``metadata`` a ``KafkaMetadataProvider``-like one (``offset_for``), for resolving
    ``auto.offset.reset`` after an out-of-range offset. ``row_limit`` is this segment's row
    target (ZK ``segment.flush.threshold.size``); the time limit is the stream's flush time,
    counted from ``created_ms`` (ZK ``segment.creation.time``, default now).
    The built segment goes under ``build_dir``. Call ``run()`` on a thread of its own;
    ``stop()`` makes it return, ``force_commit()`` ends consumption at the current offset.
    ``new_consumer()`` makes a consumer like ``consumer``, to replace one that stalled for
    ``stall_ms`` (without it the stalled one is re-positioned)."""

    def __init__(self, *, segment: MutableSegment, stream: StreamConfig, partition: int,
                 start_offset: int, row_limit: int, completion: proto.CompletionClient,
                 consumer, metadata, build_dir: str | Path, time_limit_ms: int | None = None,
                 created_ms: int | None = None,
                 hold_ms: int = proto.MAX_HOLD_TIME_MS,
                 stall_ms: float = DEFAULT_STALL_S * 1000,
                 new_consumer: Callable[[], object] | None = None):  # fmt: skip
        self.segment = segment
        self.stream = stream
        self.partition = partition
        self.start_offset = int(start_offset)
        self.current_offset = int(start_offset)
        self.row_limit = int(row_limit)
        self.time_limit_ms = stream.flush.time_ms if time_limit_ms is None else time_limit_ms
        self.completion = completion
        self.build_dir = Path(build_dir)
        self.hold_ms = hold_ms
        self.state = ConsumerState.INITIAL_CONSUMING
        self.stats = ConsumingStats()
        self.stop_reason: str | None = None
        self.final_offset: int | None = None
        self.built = None  # SegmentBuildResult once COMMITTED or RETAINED
        self.error: str | None = None
        self._consumer = consumer
        self._new_consumer = new_consumer
        self._metadata = metadata
        self.stall = StallWatch(segment.name, stall_ms)
        self._decoder = MessageDecoder.for_stream(stream, segment.schema, segment.fields_to_read)
        self._metadata_columns = (
            [c for c in METADATA_COLUMNS if c in segment.fields_to_read]
            if stream.populate_metadata
            else []
        )
        self._stop = threading.Event()
        self._force_commit = threading.Event()
        # The time limit runs from the segment's creation (ZK segment.creation.time), so a
        # restart does not extend it; a replica restarted past it still consumes a while
        # (Pinot's minimum of 10 minutes, or the whole limit when shorter).
        created = now_ms() if created_ms is None else created_ms
        remaining = created + self.time_limit_ms - now_ms()
        remaining = max(remaining, min(MIN_CONSUME_MS, self.time_limit_ms))
        self._deadline = time.monotonic() + remaining / 1000

    # ---- control -------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def force_commit(self) -> None:
        self._force_commit.set()

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES

    def run(self) -> ConsumerState:
        """Consume and complete; returns the final state (or the current one if stopped)."""
        try:
            self._consumer.start(self.current_offset)
            while not self._stop.is_set() and not self.done:
                if self.state in (ConsumerState.INITIAL_CONSUMING, ConsumerState.CATCHING_UP):
                    if self._consume() and self.state is not ConsumerState.ERROR:
                        self.state = ConsumerState.HOLDING
                elif self.state is ConsumerState.HOLDING:
                    self._ask_controller()
        except Exception as err:  # a bug must not kill the thread silently: report and stop
            log.exception("segment %s: consuming failed", self.segment.name)
            self._fail(err)
        finally:
            self._consumer.close()
        return self.state

    def catch_up_and_build(self, end_offset: int, consumer, timeout_ms: int) -> bool:
        """CONSUMING -> ONLINE while this replica is behind the committed ``end_offset``
        (after ``run()`` returned): consume up to it with ``consumer`` (a fresh one; it is
        closed here) within ``timeout_ms`` and build. False when the end offset was not reached
        in time or the build failed: the caller downloads the committed copy instead."""
        deadline = time.monotonic() + timeout_ms / 1000
        self.final_offset = int(end_offset)
        self.state = ConsumerState.CATCHING_UP
        try:
            consumer.start(self.current_offset)
            while self.current_offset < self.final_offset and time.monotonic() < deadline:
                wait = max(1, min(MAX_POLL_MS, int((deadline - time.monotonic()) * 1000)))
                try:
                    batch = consumer.fetch(self.current_offset, self.final_offset, wait)
                except StreamError as err:
                    log.warning("segment %s: catching up: %s", self.segment.name, err)
                    return False
                if len(batch):
                    self._index(batch, catching_up=True)
        finally:
            consumer.close()
        if self.current_offset != self.final_offset:
            return False
        self.state = ConsumerState.RETAINING
        if not self._build(report=False):
            return False
        self.state = ConsumerState.RETAINED
        return True

    def build_now(self) -> bool:
        """Build the rows consumed so far (CONSUMING -> ONLINE at exactly the committed end
        offset); False if the build failed."""
        self.state = ConsumerState.RETAINING
        if not self._build(report=False):
            return False
        self.state = ConsumerState.RETAINED
        return True

    # ---- consuming -----------------------------------------------------------------------------
    def _end_reached(self) -> bool:
        if self.state is ConsumerState.CATCHING_UP:
            return self.current_offset >= self.final_offset
        if self._force_commit.is_set():
            self.stop_reason = proto.REASON_FORCE_COMMIT
        elif self.segment.num_docs >= self.row_limit:
            self.stop_reason = proto.REASON_ROW_LIMIT
        elif self._remaining_ms() <= 0:
            if self.stats.messages == 0:
                # nothing arrived: committing an empty segment helps no one, wait longer
                self._deadline += min(EMPTY_EXTENSION_MS, self.time_limit_ms) / 1000
                return False
            self.stop_reason = proto.REASON_TIME_LIMIT
        else:
            return False
        return True

    def _remaining_ms(self) -> float:
        return (self._deadline - time.monotonic()) * 1000

    def _consume(self) -> bool:
        """Consume until the end criteria (True) or until stopped or failed (False)."""
        try:
            return self._fetch_until_end()
        finally:
            # no longer reading: the rows are as fresh as the last message, however idle the
            # stream was (a segment held in a long commit must not read as caught up)
            self.segment.caught_up = False

    def _fetch_until_end(self) -> bool:
        while not self._stop.is_set():
            if self._end_reached():
                return True
            catching_up = self.state is ConsumerState.CATCHING_UP
            wait_ms = MAX_POLL_MS
            if not catching_up:
                wait_ms = max(1, min(wait_ms, int(self._remaining_ms())))
            try:
                batch = self._consumer.fetch(
                    self.current_offset, self.final_offset if catching_up else None, wait_ms
                )
            except OffsetOutOfRangeError as err:
                self._reset_offset(err)
                continue
            except TransientStreamError as err:
                self.stats.transient_errors += 1
                log.warning("segment %s: %s; retrying", self.segment.name, err)
                self._stop.wait(RETRY_MS / 1000)
                continue
            except PermanentStreamError as err:
                self._fail(err)
                return False
            # nothing new: the rows are as fresh as now (Pinot reports an idle partition as
            # caught up rather than as old as its last message), unless it is stalled
            self.segment.caught_up = not len(batch) and not self.stall.stalled
            if len(batch):
                self.stall.progressed()
                self._index(batch, catching_up)
            elif batch.next_offset > self.current_offset:
                self.current_offset = batch.next_offset
            elif self.stall.due():
                self._check_stall()
        return False

    def _check_stall(self) -> None:
        try:
            upstream = self._metadata.readable_end(self.partition, timeout_ms=RETRY_MS * 5)
        except StreamError:
            upstream = None  # Kafka does not answer: no verdict, and ask afresh next time
            self._metadata.reconnect()
        client = getattr(self._consumer, "position", lambda: None)()
        position = max(self.current_offset, client or 0)
        if not self.stall.stalls_at(position, upstream):
            return
        old = self._consumer
        if self._new_consumer is None:
            old.start(self.current_offset)
        else:
            # closing may wait on the broker it is stuck on: never on this thread
            threading.Thread(target=old.close, name=f"close-{self.segment.name}",
                             daemon=True).start()  # fmt: skip
            self._consumer = self._new_consumer()
            self._consumer.start(self.current_offset)
        self.stall.recreated()

    def _index(self, batch, catching_up: bool) -> None:
        start = 0
        while start < len(batch):
            take = len(batch) - start
            if not catching_up:
                # each message yields at most one row: stop exactly at the row target, so
                # every replica ends this segment at the same offset. Messages that yield no
                # row (malformed, filtered, a dedup duplicate) leave room: index the rest of
                # the batch in slices rather than fetch it again from Kafka slice by slice
                take = min(take, max(self.row_limit - self.segment.num_docs, 0))
            if take == 0:
                return
            self._index_slice(batch, start, start + take)
            start += take

    def _index_slice(self, batch, begin: int, end: int) -> None:
        take = end - begin
        values = batch.values if take == len(batch) else batch.values[begin:end]
        decoded = self._decoder.decode(values)
        rows = decoded.batch
        positions = decoded.positions  # of each row's message in the whole batch
        if begin:
            positions = [begin + p for p in positions]
        if self._metadata_columns:
            rows = with_message_metadata(
                rows, batch, positions, self.partition, self._metadata_columns
            )
        stamp = batch.timestamps_ms[end - 1]
        stats = self.stats

        def account(result) -> None:
            # runs before the rows become queryable: a query that sees them also sees their
            # bad-row count, offset and timestamp in consumingSegmentsInfo
            stats.messages += take
            stats.rows_indexed += result.indexed
            stats.rows_filtered += result.filtered
            for position, why in decoded.errors.items():
                self._record_bad(batch.offsets[begin + position], why)
            for error in result.errors:
                self._record_bad(batch.offsets[positions[error.row]], error.message)
            if stamp >= 0:
                stats.last_message_time_ms = stamp
            stats.last_consumed_at_ms = now_ms()
            self.current_offset = (
                batch.offsets[end - 1] + 1 if end < len(batch) else batch.next_offset
            )

        self.segment.index(
            rows, source=self.segment.name, ingestion_ms=stamp, before_publish=account
        )

    def _record_bad(self, offset: int, why: str) -> None:
        self.stats.rows_malformed += 1
        self.stats.recent_errors.append((offset, why))
        if self.stats.rows_malformed <= 10 or self.stats.rows_malformed % 1000 == 0:
            log.warning("segment %s: skipped message at offset %d (%d so far): %s",
                        self.segment.name, offset, self.stats.rows_malformed, why)  # fmt: skip

    def _reset_offset(self, err: OffsetOutOfRangeError) -> None:
        """Pinot's most reported real-time failure is a partition halted on an offset that
        retention deleted; move to where ``auto.offset.reset`` points instead."""
        criteria = self.stream.offset_criteria
        try:
            target = self._metadata.offset_for(self.partition, criteria)
        except StreamError as lookup:
            log.warning("segment %s: offset %d out of range and the %s offset is unknown (%s)",
                        self.segment.name, err.offset, criteria.text, lookup)  # fmt: skip
            self.stats.transient_errors += 1
            self._stop.wait(RETRY_MS / 1000)
            return
        self.stats.offset_resets += 1
        log.warning("segment %s: offset %d of %s/%d is out of range [%s, %s); resuming at %d "
                    "(auto.offset.reset=%s)", self.segment.name, err.offset, self.stream.topic,
                    self.partition, err.earliest, err.latest, target, criteria.text)  # fmt: skip
        self.current_offset = target

    def _fail(self, err: Exception) -> None:
        self.error = f"{type(err).__name__}: {err}"
        log.error("segment %s stops consuming at %d: %s", self.segment.name,
                  self.current_offset, self.error)  # fmt: skip
        self.completion.segment_stopped_consuming(
            self.segment.name, self.current_offset, type(err).__name__
        )
        self.state = ConsumerState.ERROR

    # ---- completion ----------------------------------------------------------------------------
    def _commit_stats(self, **extra) -> proto.CommitStats:
        return proto.CommitStats(
            row_count=self.segment.num_docs, memory_used_bytes=self.segment.memory_bytes, **extra
        )

    def _hold(self) -> None:
        self._stop.wait(self.hold_ms / 1000)

    def _ask_controller(self) -> None:
        reply = self.completion.segment_consumed(
            self.segment.name, self.current_offset, self.stop_reason or "", self._commit_stats()
        )
        status = reply.status
        if status == proto.CATCH_UP and reply.offset is not None:
            if reply.offset > self.current_offset:
                self.final_offset = reply.offset
                self.state = ConsumerState.CATCHING_UP
                return
        elif status == proto.DISCARD:
            self.state = ConsumerState.DISCARDED
            return
        elif status == proto.KEEP and reply.offset in (None, self.current_offset):
            self.state = ConsumerState.RETAINING
            self.state = ConsumerState.RETAINED if self._build() else ConsumerState.ERROR
            return
        elif (
            status == proto.COMMIT
            and reply.offset in (None, self.current_offset)
            and self._commit()
        ):
            return
        self._hold()  # HOLD, NOT_LEADER, NOT_SENT, FAILED, or an answer we cannot act on

    def _build(self, *, report: bool = True) -> bool:
        """Build the immutable segment; on failure go to ERROR, telling the controller with
        segmentStoppedConsuming when ``report`` (not at the ONLINE transition, where the
        caller downloads the committed copy instead)."""
        try:
            self.built = build_consumed(
                self.segment, self.build_dir, self.start_offset, self.current_offset
            )
        except EngineError as err:
            if report:
                self._fail(err)
            else:
                log.warning("segment %s: build failed: %s", self.segment.name, err)
                self.error, self.state = f"{type(err).__name__}: {err}", ConsumerState.ERROR
            return False
        return True

    def _commit(self) -> bool:
        """Build, then commitStart / upload / commitEnd; False (back to HOLDING) if the
        controller refuses any step."""
        self.state = ConsumerState.COMMITTING
        started = time.monotonic()
        if not self._build():
            return True  # ERROR: stop here
        stats = self._commit_stats(build_time_ms=int((time.monotonic() - started) * 1000))
        if commit_built(self.completion, self.segment.name, self.built.path, self.current_offset,
                        self.build_dir, stats):  # fmt: skip
            self.state = ConsumerState.COMMITTED
            return True
        self.built = None
        self.state = ConsumerState.HOLDING
        return False
