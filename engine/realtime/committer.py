"""Building and committing a consumed segment (Pinot's ``SegmentCommitter``): the consuming
segment's rows become an immutable segment that records its offsets, which is then packed and
committed with the controller in three steps, commitStart, upload and commitEnd
(``engine.realtime.completion``). The consuming loop decides when; this is how."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

from engine.clusterstate.realtime_metadata import END_OFFSET, START_OFFSET
from engine.realtime import completion as proto
from engine.realtime.mutable_segment import MutableSegment

log = logging.getLogger(__name__)


def build_consumed(segment: MutableSegment, build_dir: Path, start_offset: int,
                   end_offset: int):  # fmt: skip
    """Build ``segment``'s rows under ``build_dir`` (replacing an earlier build), with the
    offsets it consumed, [start, end), in its custom metadata. Returns the
    ``SegmentBuildResult``; raises EngineError when the build fails."""
    target = build_dir / segment.name
    shutil.rmtree(target, ignore_errors=True)
    return segment.build(
        target, custom_metadata={START_OFFSET: str(start_offset), END_OFFSET: str(end_offset)}
    )


def commit_built(completion: proto.CompletionClient, name: str, built_path: Path, offset: int,
                 build_dir: Path, stats: proto.CommitStats) -> bool:  # fmt: skip
    """Pack the segment ``name`` built at ``built_path`` and commit it at ``offset``:
    commitStart, upload, commitEnd. True once the controller recorded the commit; False
    (logged) when it refused a step, and the caller holds and asks again. The tar.gz is
    removed either way."""
    from engine.segment import pack_segment

    tar_gz = pack_segment(built_path, build_dir / f"{name}.tar.gz")
    stats = dataclasses.replace(stats, segment_size_bytes=tar_gz.stat().st_size)
    try:
        reply = completion.segment_commit_start(name, offset, stats)
        if reply.status == proto.COMMIT_CONTINUE:
            reply = completion.segment_upload(name, offset, tar_gz)
            if reply.status == proto.UPLOAD_SUCCESS and reply.segment_location:
                reply = completion.segment_commit_end(
                    name, offset, reply.segment_location, built_path, stats
                )
                if reply.status == proto.COMMIT_SUCCESS:
                    return True
        log.warning("segment %s: commit refused (%s); holding", name, reply.status)
        return False
    finally:
        tar_gz.unlink(missing_ok=True)
