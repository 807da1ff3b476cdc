"""The controller's segment completion state machine: one per committing LLC segment.

Replicas of a CONSUMING segment report the offset they stopped at (``segment_consumed``). The
FSM picks the committer, the replica with the largest offset, and steers the others: CATCH_UP
to the winner's offset, then KEEP their own build (same offset) or DISCARD it (different).
It has no timer; it advances only when a server calls, as Pinot's blocking FSM does:

- the winner is picked at once if the first reporter stopped for ``rowLimit`` or
  ``endOfPartitionGroup``; otherwise when every replica still consuming has reported, or
  3.3 s after the first report; ties go to the caller;
- the winner gets COMMIT; if it was picked while another replica called and does not come
  back within 6.6 s of the start, the FSM aborts (HOLD);
- commitStart at the winning offset -> COMMIT_CONTINUE; the winner's upload at that offset
  stores the file and records its location; commitEnd with exactly that location runs
  ``commit`` (the ZK steps) -> COMMIT_SUCCESS; any mismatch aborts with FAILED. The
  protocol's calls carry no credentials, so the FSM, not the caller, decides what is moved
  into the deep store: only the file that this segment's winner uploaded;
- past ``start + 6.6 s + commit timeout`` (``extendBuildTime`` may stretch it up to 30 min
  after start) any call aborts with HOLD. ABORTED and COMMITTED FSMs are dropped by their
  manager; a new one starts from ZK.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse

MAX_TIME_TO_PICK_WINNER_MS = int(proto.MAX_HOLD_TIME_MS * 1.1)  # 3.3 s
MAX_TIME_TO_NOTIFY_WINNER_MS = 2 * MAX_TIME_TO_PICK_WINNER_MS  # 6.6 s
DEFAULT_COMMIT_TIMEOUT_S = 120  # controller.realtime.segment.commit.timeoutSeconds
MAX_COMMIT_TIME_MS = 1800 * 1000  # extendBuildTime never goes past 30 min after start
IMMEDIATE_WIN_REASONS = frozenset({proto.REASON_ROW_LIMIT, proto.REASON_END_OF_PARTITION_GROUP})


class FsmState(enum.StrEnum):
    HOLDING = "HOLDING"
    PARTIAL_CONSUMING = "PARTIAL_CONSUMING"
    COMMITTER_DECIDED = "COMMITTER_DECIDED"
    COMMITTER_NOTIFIED = "COMMITTER_NOTIFIED"
    COMMITTER_UPLOADING = "COMMITTER_UPLOADING"
    COMMITTING = "COMMITTING"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"


# commit(instance, end_offset, segment_location) -> True once ZK says DONE and the next
# CONSUMING segment exists; False (or an exception) fails the commit.
CommitAction = Callable[[str, int, str], bool]


class SegmentCompletionFSM:
    """The completion of one segment. ``num_replicas`` is the segment's replica count;
    ``committed_offset`` is ZK's end offset when the segment is already DONE/UPLOADED (the FSM
    then starts COMMITTED); ``clock`` returns milliseconds (monotonic)."""

    def __init__(self, segment: str, num_replicas: int, commit: CommitAction, *,
                 committed_offset: int | None = None,
                 commit_timeout_s: int = DEFAULT_COMMIT_TIMEOUT_S,
                 controller_vip_url: str | None = None,
                 pick_winner_ms: int = MAX_TIME_TO_PICK_WINNER_MS,
                 clock: Callable[[], float] = lambda: time.monotonic() * 1000):  # fmt: skip
        self.segment = segment
        self.num_replicas = max(1, int(num_replicas))
        self._commit = commit
        self._clock = clock
        self._vip = controller_vip_url
        self._pick_winner_ms = pick_winner_ms
        self.commit_timeout_s = int(commit_timeout_s)
        self.start_ms = clock()
        self.deadline_ms = (
            self.start_ms + MAX_TIME_TO_NOTIFY_WINNER_MS + self.commit_timeout_s * 1000
        )
        self.offsets: dict[str, int] = {}  # last offset each replica reported
        self.stopped: set[str] = set()
        self.winner: str | None = None
        self.winning_offset: int | None = committed_offset
        self.notified_ms: float | None = None
        self.upload_location: str | None = None  # what the winner's segmentUpload stored
        self.state = FsmState.COMMITTED if committed_offset is not None else FsmState.HOLDING
        self._lock = threading.Lock()

    @property
    def is_done(self) -> bool:
        return self.state in (FsmState.COMMITTED, FsmState.ABORTED)

    # ---- helpers -------------------------------------------------------------------------------
    def _response(self, status: str, offset: int | None = None, **kw) -> CompletionResponse:
        return CompletionResponse(status, offset, **kw)

    def _abort(self, status: str = proto.HOLD) -> CompletionResponse:
        self.state = FsmState.ABORTED
        return self._response(status)

    def _completed(self, offset: int) -> CompletionResponse:
        status = proto.KEEP if offset == self.winning_offset else proto.DISCARD
        return self._response(status, self.winning_offset)

    def _follow(self, offset: int) -> CompletionResponse:
        """A non-winner: catch up if behind the winner, else wait."""
        if self.winning_offset is not None and offset < self.winning_offset:
            return self._response(proto.CATCH_UP, self.winning_offset)
        return self._response(proto.HOLD)

    def _commit_response(self) -> CompletionResponse:
        self.state = FsmState.COMMITTER_NOTIFIED
        self.notified_ms = self._clock()
        build_sec = int((self.deadline_ms - self.start_ms) / 1000)
        return self._response(
            proto.COMMIT, self.winning_offset, build_time_sec=build_sec,
            controller_vip_url=self._vip,
        )  # fmt: skip

    def _pick_winner(self, instance: str, offset: int, reason: str) -> bool:
        if reason in IMMEDIATE_WIN_REASONS and len(self.offsets) == 1:
            self.winner, self.winning_offset = instance, offset
            return True
        expected = self.num_replicas - len(self.stopped)
        waited = self._clock() - self.start_ms
        if len(self.offsets) < expected and waited < self._pick_winner_ms:
            return False
        best = max(self.offsets.values())
        # the largest offset wins; a tie goes to the replica calling now
        self.winner = instance if offset == best else next(
            i for i, o in self.offsets.items() if o == best
        )  # fmt: skip
        self.winning_offset = best
        return True

    # ---- protocol calls ------------------------------------------------------------------------
    def segment_consumed(self, instance: str, offset: int, reason: str = "") -> CompletionResponse:
        offset = int(offset)
        with self._lock:
            self.stopped.discard(instance)  # a replica that stopped may have come back
            self.offsets[instance] = offset
            state = self.state
            if state is FsmState.COMMITTED:
                return self._completed(offset)
            if state is FsmState.ABORTED:
                return self._response(proto.HOLD)
            if self._clock() > self.deadline_ms:
                return self._abort()
            if state in (FsmState.HOLDING, FsmState.PARTIAL_CONSUMING):
                self.state = FsmState.HOLDING
                if not self._pick_winner(instance, offset, reason):
                    return self._response(proto.HOLD)
                if instance == self.winner:
                    return self._commit_response()
                self.state = FsmState.COMMITTER_DECIDED
                return self._response(proto.CATCH_UP, self.winning_offset)
            if state is FsmState.COMMITTER_DECIDED:
                if offset > self.winning_offset:
                    return self._abort()
                if self._clock() - self.start_ms > MAX_TIME_TO_NOTIFY_WINNER_MS:
                    return self._abort()  # the winner never came back to hear it won
                if instance == self.winner:
                    return (
                        self._commit_response() if offset == self.winning_offset else self._abort()
                    )
                return self._follow(offset)
            if state is FsmState.COMMITTER_NOTIFIED and instance == self.winner:
                # the winner never heard our COMMIT: tell it again (or give up on a new offset)
                if offset == self.winning_offset:
                    return self._commit_response()
                return self._abort(proto.DISCARD)
            return self._follow(offset)

    def segment_commit_start(self, instance: str, offset: int) -> CompletionResponse:
        with self._lock:
            if self.state is FsmState.COMMITTED:
                return self._completed(offset)
            if self.state is FsmState.ABORTED:
                return self._response(proto.HOLD)
            if self._clock() > self.deadline_ms:
                return self._abort()
            if instance != self.winner:
                return self._response(proto.FAILED)
            if self.state is not FsmState.COMMITTER_NOTIFIED or offset != self.winning_offset:
                return self._abort(proto.FAILED)
            self.state = FsmState.COMMITTER_UPLOADING
            return self._response(proto.COMMIT_CONTINUE, offset)

    def segment_upload(self, instance: str, offset: int,
                       store: Callable[[], str]) -> CompletionResponse:  # fmt: skip
        """The committer's upload: ``store()`` writes the file and returns its location, run
        only for the winner while it uploads at the winning offset (anyone else is FAILED
        and nothing is written). That location is then the only one commitEnd accepts."""
        with self._lock:
            if not self._uploading(instance, offset):
                return self._response(proto.FAILED)
        location = store()  # outside the lock: a large copy must not stall the other replicas
        with self._lock:
            if not self._uploading(instance, offset):  # aborted meanwhile
                return self._response(proto.FAILED)
            self.upload_location = location
            return self._response(proto.UPLOAD_SUCCESS, offset, segment_location=location)

    def _uploading(self, instance: str, offset: int) -> bool:
        return (
            self.state is FsmState.COMMITTER_UPLOADING
            and instance == self.winner
            and offset == self.winning_offset
            and self._clock() <= self.deadline_ms
        )

    def segment_commit_end(self, instance: str, offset: int, location: str) -> CompletionResponse:
        with self._lock:
            if self.state is FsmState.COMMITTED:
                return self._completed(offset)
            if not self._uploading(instance, offset) or location != self.upload_location:
                return self._abort(proto.FAILED)
            self.state = FsmState.COMMITTING
            try:
                ok = bool(self._commit(instance, offset, location))
            except Exception:  # the ZK steps failed: abort; validation repairs half-done ones
                ok = False
            if not ok:
                return self._abort(proto.FAILED)
            self.state = FsmState.COMMITTED
            return self._response(proto.COMMIT_SUCCESS, offset)

    def segment_stopped_consuming(self, instance: str, offset: int,
                                  reason: str = "") -> CompletionResponse:  # fmt: skip
        """A replica gave up; it no longer counts towards the replicas a winner waits for.
        (The caller also sets that replica OFFLINE in the ideal state.)"""
        with self._lock:
            if self.state in (FsmState.HOLDING, FsmState.PARTIAL_CONSUMING):
                self.stopped.add(instance)
                self.offsets.pop(instance, None)
                self.state = FsmState.PARTIAL_CONSUMING
            return self._response(proto.PROCESSED)

    def extend_build_time(self, instance: str, offset: int, extra_sec: int) -> CompletionResponse:
        with self._lock:
            if (
                self.state is not FsmState.COMMITTER_NOTIFIED
                or instance != self.winner
                or offset != self.winning_offset
            ):
                return self._response(proto.FAILED)
            now = self._clock()
            self.deadline_ms = min(
                self.start_ms + MAX_COMMIT_TIME_MS, max(self.deadline_ms, now + extra_sec * 1000)
            )
            self.notified_ms = now
            return self._response(proto.PROCESSED)
