"""One segment as this server hosts it: its Helix state, the loaded copy, its CRC and the
reason of its last failure, as the admin API reports them."""

from __future__ import annotations

import dataclasses

from engine.clusterstate import SegmentState
from engine.segment import ImmutableSegment


@dataclasses.dataclass
class HostedSegment:
    name: str
    resource: str
    state: str = SegmentState.OFFLINE.value
    segment: ImmutableSegment | None = None
    crc: str = ""
    error: str | None = None
    updated_ms: int = 0

    def to_json(self) -> dict:
        out = {"segmentName": self.name, "state": self.state, "crc": self.crc,
               "lastTransitionTimeMs": self.updated_ms}  # fmt: skip
        if self.segment is not None:
            out["totalDocs"] = self.segment.total_docs
        if self.error:
            out["error"] = self.error
        return out
