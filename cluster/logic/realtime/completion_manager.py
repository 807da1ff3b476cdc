"""A controller's segment completion FSMs, one per segment being completed.

The REST handlers of the protocol call this. A controller that does not lead the segment's
table answers NOT_LEADER (the server looks the leader up again). An FSM is created on the
first call for a segment by ``fsm_factory`` (which reads the segment's ZK metadata: replica
count, and the end offset when it is already committed) and dropped once COMMITTED or
ABORTED, so a controller restarted mid-commit rebuilds the FSM from ZK.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cluster.logic.realtime.completion_fsm import SegmentCompletionFSM
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.llc_name import LLCSegmentName
from engine.spi.table_name import REALTIME, table_name_with_type


class SegmentCompletionManager:
    def __init__(self, fsm_factory: Callable[[str], SegmentCompletionFSM],
                 is_leader: Callable[[str], bool]):  # fmt: skip
        """``fsm_factory(segment)`` builds a segment's FSM; ``is_leader(table_with_type)``
        says whether this controller leads the table."""
        self._factory = fsm_factory
        self._is_leader = is_leader
        self._fsms: dict[str, SegmentCompletionFSM] = {}
        self._lock = threading.Lock()

    def _dispatch(self, segment: str, call: Callable[[SegmentCompletionFSM], CompletionResponse]):
        name = LLCSegmentName.parse(segment)
        if name is None:
            return CompletionResponse(proto.FAILED)
        if not self._is_leader(table_name_with_type(name.table, REALTIME)):
            return CompletionResponse(proto.NOT_LEADER)
        with self._lock:
            fsm = self._fsms.get(segment)
            if fsm is None:
                fsm = self._fsms[segment] = self._factory(segment)
        response = call(fsm)
        if fsm.is_done:
            with self._lock:
                if self._fsms.get(segment) is fsm:
                    del self._fsms[segment]
        return response

    def active(self) -> list[str]:
        """Segments with an FSM in progress."""
        with self._lock:
            return sorted(self._fsms)

    def segment_consumed(self, segment, instance, offset, reason=""):
        return self._dispatch(segment, lambda f: f.segment_consumed(instance, offset, reason))

    def segment_commit_start(self, segment, instance, offset):
        return self._dispatch(segment, lambda f: f.segment_commit_start(instance, offset))

    def segment_upload(self, segment, instance, offset, store):
        return self._dispatch(segment, lambda f: f.segment_upload(instance, offset, store))

    def segment_commit_end(self, segment, instance, offset, location):
        return self._dispatch(segment, lambda f: f.segment_commit_end(instance, offset, location))

    def segment_stopped_consuming(self, segment, instance, offset, reason=""):
        return self._dispatch(
            segment, lambda f: f.segment_stopped_consuming(instance, offset, reason)
        )

    def extend_build_time(self, segment, instance, offset, extra_sec):
        return self._dispatch(segment, lambda f: f.extend_build_time(instance, offset, extra_sec))
