"""The server side of Pinot's segment completion protocol.

A replica that reaches its segment's end criteria asks the table's lead controller what to do
(``segmentConsumed``) and follows the answer: HOLD and ask again, CATCH_UP to a given offset,
COMMIT (build, ``segmentCommitStart``, ``segmentUpload``, ``segmentCommitEndWithMetadata``),
KEEP its own build, or DISCARD it and download the committed copy. ``segmentStoppedConsuming``
tells the controller a replica gave up. Names, parameters and response JSON are Pinot's
(``SegmentCompletionProtocol``); the status and reason strings here are the one home of those
names for the server and the controller.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import orjson
import requests

log = logging.getLogger(__name__)

# Controller response statuses
NOT_SENT = "NOT_SENT"  # never sent by a controller: the request did not get an answer
COMMIT = "COMMIT"
HOLD = "HOLD"
CATCH_UP = "CATCH_UP"
DISCARD = "DISCARD"
KEEP = "KEEP"
NOT_LEADER = "NOT_LEADER"
FAILED = "FAILED"
COMMIT_SUCCESS = "COMMIT_SUCCESS"
COMMIT_CONTINUE = "COMMIT_CONTINUE"
PROCESSED = "PROCESSED"
UPLOAD_SUCCESS = "UPLOAD_SUCCESS"
STATUSES = frozenset(
    {NOT_SENT, COMMIT, HOLD, CATCH_UP, DISCARD, KEEP, NOT_LEADER, FAILED, COMMIT_SUCCESS,
     COMMIT_CONTINUE, PROCESSED, UPLOAD_SUCCESS}
)  # fmt: skip

# Why a replica stopped consuming (``reason`` of segmentConsumed)
REASON_ROW_LIMIT = "rowLimit"
REASON_TIME_LIMIT = "timeLimit"
REASON_END_OF_PARTITION_GROUP = "endOfPartitionGroup"
REASON_FORCE_COMMIT = "forceCommitMessageReceived"
REASON_INDEX_CAPACITY = "indexCapacityThresholdBreached"

MAX_HOLD_TIME_MS = 3000  # how long a server holds before asking again


@dataclasses.dataclass(frozen=True)
class CompletionResponse:
    """A controller's answer. ``offset`` is ``streamPartitionMsgOffset`` (the winner's offset
    for CATCH_UP, the committed one for KEEP/DISCARD), None when absent; ``build_time_sec`` is
    the time allowed to build for COMMIT (-1 when not given)."""

    status: str
    offset: int | None = None
    build_time_sec: int = -1
    is_split_commit: bool = True
    segment_location: str | None = None
    controller_vip_url: str | None = None

    @classmethod
    def from_json(cls, body: bytes | str | dict) -> CompletionResponse:
        """Parse Pinot's response JSON; an unreadable body or unknown status is NOT_SENT (the
        server then holds and asks again, as for any answer it cannot act on)."""
        try:
            raw = body if isinstance(body, dict) else orjson.loads(body)
        except orjson.JSONDecodeError:
            return cls(NOT_SENT)
        if not isinstance(raw, dict) or raw.get("status") not in STATUSES:
            return cls(NOT_SENT)
        offset = raw.get("streamPartitionMsgOffset")
        if offset is None and raw.get("offset") not in (None, -1):
            offset = raw["offset"]  # controllers before 1.3 sent a long "offset"
        try:
            offset = None if offset is None else int(offset)
        except (TypeError, ValueError):
            return cls(NOT_SENT)
        return cls(
            status=raw["status"],
            offset=offset,
            build_time_sec=int(raw.get("buildTimeSec", -1) or -1),
            is_split_commit=bool(raw.get("isSplitCommitType", True)),
            segment_location=raw.get("segmentLocation"),
            controller_vip_url=raw.get("controllerVipUrl"),
        )

    def to_json(self) -> dict:
        """Pinot's shape: the offset is always written (null when absent); location and VIP
        URL only when set."""
        body = {
            "status": self.status,
            "streamPartitionMsgOffset": None if self.offset is None else str(self.offset),
            "buildTimeSec": self.build_time_sec,
            "isSplitCommitType": self.is_split_commit,
        }
        if self.segment_location is not None:
            body["segmentLocation"] = self.segment_location
        if self.controller_vip_url is not None:
            body["controllerVipUrl"] = self.controller_vip_url
        return body


@dataclasses.dataclass(frozen=True)
class CommitStats:
    """Optional numbers a server reports while committing (-1 = not known)."""

    row_count: int = -1
    memory_used_bytes: int = -1
    build_time_ms: int = -1
    wait_time_ms: int = -1
    segment_size_bytes: int = -1


class CompletionClient(Protocol):
    """What a consuming partition needs from the controller. Every call answers with a
    ``CompletionResponse``; none raises for a network failure (that is NOT_SENT)."""

    def segment_consumed(self, segment: str, offset: int, reason: str,
                         stats: CommitStats) -> CompletionResponse: ...  # fmt: skip

    def segment_commit_start(self, segment: str, offset: int,
                             stats: CommitStats) -> CompletionResponse: ...  # fmt: skip

    def segment_upload(self, segment: str, offset: int, tar_gz: Path) -> CompletionResponse: ...

    def segment_commit_end(self, segment: str, offset: int, location: str, segment_dir: Path,
                           stats: CommitStats) -> CompletionResponse: ...  # fmt: skip

    def segment_stopped_consuming(self, segment: str, offset: int,
                                  reason: str) -> CompletionResponse: ...  # fmt: skip


def _stats_params(stats: CommitStats) -> dict:
    # Like Pinot, unknown (non-positive) numbers are left out of the request.
    named = {
        "rowCount": stats.row_count,
        "memoryUsedBytes": stats.memory_used_bytes,
        "buildTimeMillis": stats.build_time_ms,
        "waitTimeMillis": stats.wait_time_ms,
        "segmentSizeBytes": stats.segment_size_bytes,
    }
    return {k: str(v) for k, v in named.items() if v is not None and v > 0}


class HttpCompletionClient:
    """The protocol over HTTP to the table's lead controller. ``controller_url`` returns the
    base URL (``http://host:port``) of the controller to ask, or None when unknown (then the
    call is NOT_SENT); NOT_LEADER answers make the caller look it up again next time."""

    def __init__(self, instance_id: str, controller_url: Callable[[], str | None], *,
                 timeout_s: float = 30.0, upload_timeout_s: float = 600.0,
                 session: requests.Session | None = None,
                 headers: dict[str, str] | None = None):  # fmt: skip
        self.instance_id = instance_id
        self._controller_url = controller_url
        self._timeout = timeout_s
        self._upload_timeout = upload_timeout_s
        self._http = session or requests.Session()
        self._http.headers.update(headers or {})  # pinot.server.segment.uploader.auth

    def _call(self, method: str, verb: str, params: dict, **kwargs) -> CompletionResponse:
        base = self._controller_url()
        if not base:
            log.warning("%s for %s not sent: no lead controller known", verb, params.get("name"))
            return CompletionResponse(NOT_SENT)
        query = {"name": params.pop("name"), "instance": self.instance_id, **params}
        try:
            reply = self._http.request(
                method, f"{base.rstrip('/')}/{verb}", params=query,
                timeout=kwargs.pop("timeout", self._timeout), **kwargs,
            )  # fmt: skip
        except requests.RequestException as err:
            log.warning("%s for %s failed: %s", verb, query["name"], err)
            return CompletionResponse(NOT_SENT)
        if reply.status_code >= 400:
            log.warning("%s for %s: HTTP %s %s", verb, query["name"], reply.status_code,
                        reply.text[:200])  # fmt: skip
            return CompletionResponse(NOT_SENT)
        return CompletionResponse.from_json(reply.content)

    def segment_consumed(self, segment, offset, reason, stats=CommitStats()):
        params = {"name": segment, "streamPartitionMsgOffset": str(offset), "reason": reason}
        return self._call("GET", "segmentConsumed", params | _stats_params(stats))

    def segment_commit_start(self, segment, offset, stats=CommitStats()):
        params = {"name": segment, "streamPartitionMsgOffset": str(offset)}
        return self._call("GET", "segmentCommitStart", params | _stats_params(stats))

    def segment_upload(self, segment, offset, tar_gz):
        with open(tar_gz, "rb") as fh:
            return self._call(
                "POST", "segmentUpload",
                {"name": segment, "streamPartitionMsgOffset": str(offset)},
                files={segment: (Path(tar_gz).name, fh, "application/octet-stream")},
                timeout=self._upload_timeout,
            )  # fmt: skip

    def segment_commit_end(self, segment, offset, location, segment_dir, stats=CommitStats()):
        segment_dir = Path(segment_dir)
        files = {
            name: (name, (segment_dir / name).read_bytes(), "application/octet-stream")
            for name in ("metadata.properties", "creation.meta")
        }
        params = {"name": segment, "streamPartitionMsgOffset": str(offset), "location": location}
        return self._call(
            "POST", "segmentCommitEndWithMetadata", params | _stats_params(stats), files=files
        )

    def segment_stopped_consuming(self, segment, offset, reason):
        params = {"name": segment, "streamPartitionMsgOffset": str(offset), "reason": reason}
        return self._call("GET", "segmentStoppedConsuming", params)
