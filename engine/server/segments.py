"""The segments this server hosts, and the state transitions that load and drop them.

States follow Helix's SegmentOnlineOfflineStateModel: OFFLINE -> ONLINE downloads (unless a
local copy with the same CRC exists) and loads; ONLINE -> OFFLINE unloads; -> DROPPED deletes
the local files and the entry; a failed load leaves the segment in ERROR with its reason, and
only a reset (ERROR -> OFFLINE, then the ideal state brings it ONLINE again) retries it.

Every change is written to this instance's current state for the resource under the current
ZooKeeper session; the controller aggregates those into the external view.

Only the worker loop mutates; query threads read ``online_segments`` from an immutable
snapshot (``engine.server.served``), so queries never wait for a download. No transition leaves a moment in which a
segment the brokers may still route here is unserved: a reload or refresh loads the new copy
before it replaces the old one in that snapshot (queries in flight finish on the old copy),
and a segment taken away is drained first (``engine.server.drain``). The files are
``engine.server.local_copies``; columns added to the schema since a segment was built are
written in as it loads (``engine.server.default_columns``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from engine.clusterstate import (
    ClusterStore,
    CurrentState,
    SegmentState,
    ZooKeeperUnavailableError,
)
from engine.common.clock import now_ms
from engine.common.errors import EngineError
from engine.runtime import SchemaCache
from engine.segment import ImmutableSegment, load_segment
from engine.segment.tarball import DEFAULT_MAX_UNPACKED_BYTES
from engine.server.default_columns import DefaultColumns
from engine.server.download import SegmentSources, fetch_segment
from engine.server.drain import DrainQueue, RetiredSegment
from engine.server.errors import SegmentLoadError
from engine.server.hosted import HostedSegment
from engine.server.local_copies import LocalCopies
from engine.server.served import ServedSegments

log = logging.getLogger(__name__)

ONLINE = SegmentState.ONLINE.value
OFFLINE = SegmentState.OFFLINE.value
ERROR = SegmentState.ERROR.value
CONSUMING = SegmentState.CONSUMING.value
DROPPED = SegmentState.DROPPED.value
PUBLISH_INTERVAL_S = 1.0


class SegmentDataManager:
    """``store_of`` returns the ClusterStore to use and ``session_of`` the current session id
    (both raise ZooKeeperUnavailableError while ZooKeeper is down)."""

    def __init__(
        self,
        instance_id: str,
        data_dir: Path,
        store_of: Callable[[], ClusterStore],
        session_of: Callable[[], str],
        *,
        on_unload: Callable[[ImmutableSegment], None] = lambda _segment: None,
        realtime=None,
        drain_s: float = 0.0,
        wake: Callable[[], None] | None = None,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
        sources: SegmentSources = SegmentSources(),  # noqa: B008 (frozen)
        schemas: SchemaCache | None = None,
        download_headers: dict[str, str] | None = None,
    ) -> None:
        """``drain_s``: seconds a segment taken away from this server keeps serving after the
        current state left it out (0: unloaded at once); ``wake`` pokes the worker loop when a
        drain is due (it then calls ``release_drained``)."""
        self.instance_id = instance_id
        self.data_dir = Path(data_dir)
        self.local = LocalCopies(self.data_dir)
        self._store_of = store_of
        self._session_of = session_of
        self._on_unload = on_unload  # e.g. drop the segment's decoded columns now
        # engine.server.realtime.RealtimeSegmentManager: CONSUMING segments (None: ignored)
        self.realtime = realtime
        # engine.server.upsert_tables.UpsertTables: upsert/dedup metadata (None: no upsert)
        self.upsert = None
        self._download_headers = download_headers  # pinot.server.segment.fetcher.auth
        self._hosted: dict[str, dict[str, HostedSegment]] = {}
        self._served = ServedSegments()
        self._drain = DrainQueue(drain_s, wake)
        self._max_unpacked_bytes = max_unpacked_bytes
        self._sources = sources  # where http(s) download URLs may point
        self._defaults = DefaultColumns(schemas)

    # --- reads (any thread) ------------------------------------------------------------------
    def online_segments(
        self, resource: str, names: list[str]
    ) -> tuple[list[ImmutableSegment], list[str]]:
        """The loaded segments among ``names`` and the names this server does not serve."""
        table = self._served.table(resource)
        found, missing = [], []
        for name in names:
            seg = table.get(name)
            if seg is None and self.realtime is not None:
                seg = self.realtime.snapshot(resource, name)  # a CONSUMING segment
            if seg is None:
                missing.append(name)
            else:
                found.append(seg)
        return found, missing

    def describe(self) -> dict[str, list[dict]]:
        """resource -> [segment state, crc, docs, error reason], for the admin API."""
        return {
            resource: [h.to_json() for _, h in sorted(segments.items())]
            for resource, segments in sorted(self._hosted.items())
        }

    def count_by_state(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for segments in self._hosted.values():
            for hosted in segments.values():
                counts[hosted.state] = counts.get(hosted.state, 0) + 1
        return counts

    def document_counts(self) -> dict[str, int]:
        """Docs served per table (loaded segments and consuming ones), Pinot's documentCount."""
        out: dict[str, int] = {}
        for resource, segments in list(self._hosted.items()):
            docs = 0
            for name, hosted in list(segments.items()):
                if hosted.segment is not None:
                    docs += hosted.segment.total_docs
                elif hosted.state == CONSUMING and self.realtime is not None:
                    snapshot = self.realtime.snapshot(resource, name)
                    docs += snapshot.total_docs if snapshot is not None else 0
            out[resource] = docs
        return out

    def resources(self) -> list[str]:
        return list(self._hosted)

    # --- transitions (worker loop only) ------------------------------------------------------
    def apply(self, resource: str, target: dict[str, str]) -> bool:
        """Move the resource's segments toward ``target`` (segment -> ONLINE | OFFLINE |
        DROPPED); hosted segments absent from ``target`` are dropped. Returns whether any
        state changed. CONSUMING targets start a consumer (``engine.server.realtime``);
        CONSUMING -> ONLINE loads the committed segment while the consuming one still serves."""
        hosted = self._hosted.setdefault(resource, {})
        changed = False
        last_publish = time.monotonic()
        upsert = self.upsert is not None and self.upsert.of(resource) is not None
        # an upsert/dedup table loads its segments before it consumes (Pinot waits for
        # them before a partial upsert or dedup consumes: merges need the previous rows)
        for name in sorted(target, key=lambda n: (upsert and target[n] == CONSUMING, n)):
            if changed and time.monotonic() - last_publish > PUBLISH_INTERVAL_S:
                # a long batch of loads reports its progress, so brokers use each segment
                # as soon as it is ONLINE rather than when the whole batch is done
                self.publish(resource)
                last_publish = time.monotonic()
            want = target[name]
            entry = hosted.get(name)
            have = entry.state if entry else OFFLINE
            if want in (ONLINE, CONSUMING) and have == OFFLINE and self._refused(resource, name):
                changed = True  # a name that cannot be a path here: ERROR, nothing on disk
            elif want == ONLINE and have == OFFLINE:
                self._load(resource, name)
                changed = True
            elif want == CONSUMING and have == OFFLINE and self.realtime is not None:
                self._consume(resource, name)
                changed = True
            elif want == ONLINE and have == CONSUMING:
                self.realtime.finish(resource, name, self.local.path(resource, name))
                self._load(resource, name)
                self.realtime.forget(resource, name)
                changed = True
            elif want == OFFLINE and have in (ONLINE, CONSUMING):
                self._unload(resource, name, drain=True)
                changed = True
            elif want == DROPPED and entry is not None:
                self._drop(resource, name)
                changed = True
        for name in [n for n in hosted if n not in target]:
            self._drop(resource, name)
            changed = True
        if changed:
            self.publish(resource)
        if not hosted:
            del self._hosted[resource]
        return changed

    def reset(self, resource: str, segment: str | None) -> list[str]:
        """ERROR -> OFFLINE for one segment (or all of the resource); the next ``apply``
        loads them again. Returns the segments reset."""
        reset = []
        for name, hosted in self._hosted.get(resource, {}).items():
            if (segment in (None, "", name)) and hosted.state == ERROR:
                hosted.state, hosted.error = OFFLINE, None
                hosted.updated_ms = now_ms()
                reset.append(name)
        if reset:
            self.publish(resource)
        return reset

    def reload(self, resource: str, segment: str | None, *, force_download: bool) -> list[str]:
        """Load again ONLINE (and ERROR) segments, one or all of the resource. The new copy
        replaces the old one only once it is loaded; if it fails to load, the old one keeps
        serving (with the error in ``describe``). With ``force_download`` the local copy is
        not reused (a refresh)."""
        names = [
            n for n, h in self._hosted.get(resource, {}).items()
            if segment in (None, "", n) and h.state in (ONLINE, ERROR)
        ]  # fmt: skip
        if names:
            self._defaults.schema_changed(resource)  # a reload follows a schema change
        for name in names:
            self._load(resource, name, force_download=force_download)
        if names:
            self.publish(resource)
        return names

    def publish(self, resource: str) -> None:
        """Write the resource's current state (or remove it when nothing is hosted)."""
        store = self._store_of()
        session = self._session_of()
        states = {n: h.state for n, h in self._hosted.get(resource, {}).items()}
        if states:
            store.put_current_state(self.instance_id, CurrentState(resource, session, states))
        else:
            store.delete(store.paths.current_state(self.instance_id, session, resource))
        self._drain.published(resource)

    def release_drained(self) -> list[str]:
        """Unload the drained segments whose grace period is over; their names. A drain
        whose current state could not be written (ZooKeeper away) is published again first:
        its clock starts only once brokers can learn of it."""
        for resource in self._drain.unpublished():
            self.publish(resource)
        return [self._release(retired) for retired in self._drain.due()]

    def publish_all(self) -> None:
        """Write every current state (after registering a new session)."""
        for resource in list(self._hosted):
            self.publish(resource)

    def remove_stale_local_copies(self) -> list[Path]:
        """Delete local segment directories (and interrupted downloads) of segments this
        server does not host; returns what was removed."""
        return self.local.remove_stale(
            lambda table: self._hosted.get(table, {}).keys() | self._drain.names(table)
        )

    def unload_all(self) -> None:
        for retired in self._drain.take_all():
            self._release(retired)
        for resource, hosted in self._hosted.items():
            for name in list(hosted):
                self._unload(resource, name)

    # --- the steps ---------------------------------------------------------------------------
    def _refused(self, resource: str, name: str) -> bool:
        """A name that cannot be a local path: ERROR with the reason, no disk, now or later."""
        refusal = self.local.refusal(resource, name)
        if refusal is not None:
            hosted = self._hosted[resource].setdefault(name, HostedSegment(name, resource))
            hosted.state, hosted.error, hosted.updated_ms = ERROR, str(refusal), now_ms()
            log.error("segment %r of %r refused: %s", name, resource, refusal)
        return refusal is not None

    def _load(self, resource: str, name: str, *, force_download: bool = False) -> None:
        """Load ``name`` and make it the served copy in one swap. A copy served until now
        (a reload, or a drained segment assigned here again) is pinned to its files first,
        so replacing the directory cannot change what queries in flight read, and released
        after the swap."""
        hosted = self._hosted[resource].setdefault(name, HostedSegment(name, resource))
        retired = self._drain.get(resource, name)
        previous = hosted.segment or (retired.segment if retired else None)
        if previous is not None:
            try:
                previous.map_data()
            except EngineError as exc:  # its files are damaged: nothing left to keep safe
                log.warning("segment %s/%s: %s", resource, name, exc)
        started = time.monotonic()
        try:
            meta = self._store_of().segment_metadata(resource, name)
            if meta is None:
                raise SegmentLoadError(
                    f"no segment metadata in ZooKeeper for {resource}/{name} "
                    "(PROPERTYSTORE/SEGMENTS); was the upload completed?"
                )
            seg_dir = fetch_segment(self.local.path(resource, name), meta, force=force_download,
                                    sources=self._sources,
                                    max_unpacked_bytes=self._max_unpacked_bytes,
                                    headers=self._download_headers)  # fmt: skip
            self._defaults.write(resource, seg_dir)
            segment = load_segment(seg_dir)
        except ZooKeeperUnavailableError:
            raise  # the loop retries once ZooKeeper is back; the segment is not at fault
        except (EngineError, OSError) as exc:
            hosted.error, hosted.updated_ms = str(exc), now_ms()
            if hosted.state == ONLINE and hosted.segment is not None:
                log.error("segment %s/%s: the new copy failed to load, the old one keeps "
                          "serving: %s", resource, name, exc)  # fmt: skip
                return
            hosted.state, hosted.segment = ERROR, None
            log.error("segment %s/%s failed to load: %s", resource, name, exc)
            return

        def publish() -> None:
            hosted.state, hosted.segment, hosted.error = ONLINE, segment, None
            hosted.crc = str(segment.metadata.crc)
            hosted.updated_ms = now_ms()
            self._served.put(resource, name, segment)

        if not self._add_upsert_segment(resource, name, segment, meta, publish):
            return
        self._drain.discard(resource, name)
        if previous is not None:
            self._on_unload(previous)
        log.info("segment %s/%s ONLINE (%d docs, %.0f ms)", resource, name,
                 segment.total_docs, (time.monotonic() - started) * 1000)  # fmt: skip

    def _add_upsert_segment(self, resource: str, name: str, segment, meta, publish) -> bool:
        """An upsert/dedup table's segment enters its metadata and is published under the
        partition lock; other tables publish at once. False: ERROR, or the old copy kept."""
        if self.upsert is None:
            publish()
            return True
        error = self.upsert.add_loaded(resource, name, segment, meta.creation_time_ms, publish)
        if error is not None:
            hosted = self._hosted[resource][name]
            hosted.error, hosted.updated_ms = error, now_ms()
            if hosted.segment is None:
                hosted.state = ERROR
        return error is None

    def need_reload(self, resource: str) -> bool:
        """Whether a loaded segment of ``resource`` lacks a column of the current schema (or
        holds a stale auto-generated one): Pinot's needReload."""
        return self._defaults.missing(resource, self._served.table(resource).values())

    def _consume(self, resource: str, name: str) -> None:
        hosted = self._hosted[resource].setdefault(name, HostedSegment(name, resource))
        try:
            self.realtime.start(resource, name)
        except SegmentLoadError as exc:
            hosted.state, hosted.error = ERROR, str(exc)
            log.error("segment %s/%s cannot consume: %s", resource, name, exc)
        else:
            hosted.state, hosted.error = CONSUMING, None
        hosted.updated_ms = now_ms()

    def _forget_upsert(self, resource: str, name: str) -> None:
        if self.upsert is not None:
            self.upsert.remove_segment(resource, name)  # its keys leave the metadata

    def _stop_consuming(self, resource: str, name: str) -> None:
        if self.realtime is not None:
            if self.realtime.snapshot(resource, name) is not None:
                self._forget_upsert(resource, name)
            self.realtime.stop(resource, name)
            self.realtime.forget(resource, name)

    def _unload(self, resource: str, name: str, *, drain: bool = False) -> None:
        """-> OFFLINE; with ``drain`` an ONLINE segment keeps serving for the drain period."""
        hosted = self._hosted[resource][name]
        if hosted.state == CONSUMING:
            self._stop_consuming(resource, name)
        segment, hosted.state, hosted.segment = hosted.segment, OFFLINE, None
        hosted.updated_ms = now_ms()
        if segment is not None:
            self._retire(resource, name, segment, remove_dir=False, drain=drain)

    def _drop(self, resource: str, name: str) -> None:
        self._stop_consuming(resource, name)
        hosted = self._hosted[resource].pop(name, None)
        retired = self._drain.get(resource, name)
        if hosted is not None and hosted.segment is not None:
            self._retire(resource, name, hosted.segment, remove_dir=True, drain=True)
        elif retired is not None:
            retired.remove_dir = True  # OFFLINE and draining, now dropped: files go after it
        else:
            self.local.remove(resource, name)
        log.info("segment %r of %r dropped", name, resource)

    def _retire(self, resource: str, name: str, segment: ImmutableSegment, *, remove_dir: bool,
                drain: bool) -> None:  # fmt: skip
        """Stop serving ``segment``: after the drain period (``publish`` starts its clock),
        or now."""
        retired = RetiredSegment(resource, name, segment, remove_dir)
        if drain and self._drain.seconds > 0:
            self._drain.add(resource, name, segment, remove_dir=remove_dir)
            log.info("segment %s/%s serves %.1f s more while brokers learn it left", resource,
                     name, self._drain.seconds)  # fmt: skip
        else:
            self._release(retired)

    def _release(self, retired: RetiredSegment) -> str:
        resource, name = retired.resource, retired.name
        if self._served.table(resource).get(name) is retired.segment:
            self._served.put(resource, name, None)
            if self.upsert is not None and name not in self._hosted.get(resource, {}):
                self._forget_upsert(resource, name)
        self._on_unload(retired.segment)  # its decoded columns go now, not at GC time
        if retired.remove_dir and name not in self._hosted.get(resource, {}):
            self.local.remove(resource, name)
        return name
