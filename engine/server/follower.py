"""The server's worker loop: follow the ideal states and handle the controller's messages.

ZooKeeper watches (one-shot, re-armed on every pass) and connection-state changes only poke
the loop (``engine.runtime.Membership``); one thread then registers (on a new session),
reconciles every ideal state with what is hosted, and handles ``INSTANCES/<id>/MESSAGES``. A
periodic pass every ``resync_interval_s`` covers anything a lost watch would miss. ZooKeeper
outages are waited out: the loop retries and the hosted segments keep serving queries
meanwhile.
"""

from __future__ import annotations

import logging

from kazoo.exceptions import NoNodeError

from engine.clusterstate import (
    BROKER_RESOURCE,
    ClusterStateError,
    Message,
    ResourceAssignment,
    SegmentState,
    ZNRecord,
)
from engine.clusterstate.records import FORCE_COMMIT_MESSAGE, FORCE_COMMIT_SEGMENTS
from engine.runtime.participant import Membership, Participant
from engine.server.segments import SegmentDataManager

log = logging.getLogger(__name__)

RELOAD = "SEGMENT_RELOAD"
RESET = "SEGMENT_RESET"
REFRESH = "SEGMENT_REFRESH"


class IdealStateFollower(Membership):
    def __init__(
        self,
        participant: Participant,
        segments: SegmentDataManager,
        *,
        resync_interval_s: float = 10.0,
    ) -> None:
        super().__init__(participant, "ideal-state-follower", interval_s=resync_interval_s)
        self.segments = segments

    def on_new_session(self) -> None:
        self.segments.publish_all()  # the lost session took the current states with it

    def follow(self) -> None:
        self.handle_messages()
        self.reconcile()
        self.segments.release_drained()
        if self.passes == 0:
            # what an earlier run left on disk and the ideal state no longer assigns here
            self.segments.remove_stale_local_copies()

    # --- ideal states ------------------------------------------------------------------------
    def reconcile(self) -> None:
        client = self.participant.client
        paths = self.participant.store.paths
        me = self.participant.instance_id
        try:
            resources = client.get_children(paths.ideal_states, watch=self.poke)
        except NoNodeError:
            resources = []
        seen = set()
        for resource in sorted(resources):
            if resource == BROKER_RESOURCE:
                continue
            ideal = self._read_ideal_state(paths.ideal_state(resource))
            if ideal is None:
                continue
            seen.add(resource)
            target = {seg: m[me] for seg, m in ideal.segments.items() if me in m}
            if not ideal.enabled:
                target = dict.fromkeys(target, SegmentState.OFFLINE.value)
            if target or resource in self.segments.resources():
                self.segments.apply(resource, target)
        for resource in self.segments.resources():
            if resource not in seen:
                self.segments.apply(resource, {})

    def _read_ideal_state(self, path: str) -> ResourceAssignment | None:
        try:
            data, _ = self.participant.client.get(path, watch=self.poke)
        except NoNodeError:
            return None
        if not data:
            return None
        try:
            return ResourceAssignment.from_record(ZNRecord.from_bytes(data, where=path))
        except ClusterStateError as exc:
            log.error("ignoring a malformed ideal state: %s", exc)
            return None

    # --- messages ----------------------------------------------------------------------------
    def handle_messages(self) -> None:
        client = self.participant.client
        store = self.participant.store
        base = store.paths.messages(self.participant.instance_id)
        try:
            names = client.get_children(base, watch=self.poke)
        except NoNodeError:
            return
        for name in sorted(names):
            path = f"{base}/{name}"
            try:
                record, _ = store.get_record(path)
            except ClusterStateError as exc:
                log.error("dropping a malformed message %s: %s", path, exc)
                store.delete(path)
                continue
            if record is not None:
                self.handle(Message.from_record(record))
            store.delete(path)

    def handle(self, message: Message) -> None:
        resource, segment = message.resource, message.segment or None
        if message.sub_type == RELOAD:
            force = message.extra.get("forceDownload", "false").lower() == "true"
            done = self.segments.reload(resource, segment, force_download=force)
        elif message.sub_type == REFRESH:
            done = self.segments.reload(resource, segment, force_download=True)
        elif message.sub_type == RESET:
            done = self.segments.reset(resource, segment)
        elif message.sub_type == FORCE_COMMIT_MESSAGE:
            names = [n for n in message.extra.get(FORCE_COMMIT_SEGMENTS, "").split(",") if n]
            realtime = self.segments.realtime
            done = realtime.force_commit(resource, names) if realtime is not None else []
        else:
            log.warning("ignoring message %s of unknown type %r", message.message_id,
                        message.sub_type)  # fmt: skip
            return
        log.info("%s %s/%s: %d segment(s)", message.sub_type, resource, segment or "*", len(done))
