"""The controller's side of a commit, outside the FSM: the committer's upload
(``segmentUpload``), the commit itself once the FSM accepts ``segmentCommitEndWithMetadata``
(the upload moved to its final deep-store place, then the ZK steps), and building a
segment's FSM from ZooKeeper.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import fsspec

from cluster.logic.realtime import llc_metadata as llc
from cluster.logic.realtime.completion_fsm import SegmentCompletionFSM
from cluster.logic.realtime.consuming_segments import commit_segment
from engine.clusterstate import ClusterStore
from engine.clusterstate.segment_status import is_committed
from engine.realtime.llc_name import LLCSegmentName
from engine.segment import read_metadata, unpack_segment


def receive_upload(deep_store, segment: str, source) -> str:
    """Store the committer's tar.gz (a binary file object) as
    ``<deep store>/<rawTable>/<segment>.tmp.<uuid>``, as Pinot does; returns its location."""
    name = LLCSegmentName.parse(segment)
    if name is None:
        raise ValueError(f"{segment} is not an LLC segment name")
    folder = deep_store.table_path(name.table)
    deep_store.fs.makedirs(folder, exist_ok=True)
    path = f"{folder}/{quote(segment, safe='')}.tmp.{uuid.uuid4().hex}"
    with deep_store.fs.open(path, "wb") as out:
        shutil.copyfileobj(source, out)
    return deep_store.url_of(path)


def finish_commit(store: ClusterStore, config, deep_store, segment: str, end_offset: int,
                  location: str, controller_url: str) -> str | None:  # fmt: skip
    """Move the uploaded ``location`` to the segment's deep-store place, read the segment's
    metadata from it, and run the ZK commit steps; returns the next CONSUMING segment (None
    when the table is paused). The
    download URL is ``<controller_url>/segments/<rawTable>/<segment>`` (local deep store)."""
    name = LLCSegmentName.parse(segment)
    if name is None:
        raise ValueError(f"{segment} is not an LLC segment name")
    fs = deep_store.fs
    # the FSM accepts only the location the upload handed out; checked here again, normalised
    source = deep_store.inside(fsspec.core.url_to_fs(location)[1])
    if not source.startswith(f"{deep_store.table_path(name.table)}/"):
        raise ValueError(f"the upload location is not in the deep store of {name.table}")
    final = deep_store.segment_path(name.table, segment)
    fs.mv(source, final)
    work = Path(tempfile.mkdtemp(prefix="sprig-commit-"))
    try:
        tar = work / "segment.tar.gz"
        fs.get_file(final, str(tar))
        built = read_metadata(unpack_segment(tar, work / "unpacked"))
        size = tar.stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    download_url = f"{controller_url.rstrip('/')}/segments/{name.table}/{quote(segment, safe='')}"
    return commit_segment(
        store, config, segment, end_offset, built, download_url=download_url,
        size_in_bytes=size, extra={"segment.deep.store.url": deep_store.url_of(final)},
    )  # fmt: skip


def fsm_from_zk(store: ClusterStore, table_with_type: str, segment: str,
                commit: Callable[[str, int, str], bool], **options) -> SegmentCompletionFSM:  # fmt: skip
    """A segment's FSM as ZK describes it: its replica count, and COMMITTED at its end offset
    when it is DONE already (a controller restarted mid-commit answers KEEP/DISCARD)."""
    meta = store.segment_metadata(table_with_type, segment)
    if meta is None:
        raise ValueError(f"segment {segment} of {table_with_type} has no ZK metadata")
    committed = None
    if is_committed(meta) and meta.extra.get(llc.END_OFFSET):
        committed = int(meta.extra[llc.END_OFFSET])
    replicas = int(meta.extra.get(llc.NUM_REPLICAS) or 1)
    return SegmentCompletionFSM(segment, replicas, commit, committed_offset=committed, **options)
