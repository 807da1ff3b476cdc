"""ClusterStore: typed reads and writes of the cluster layout (Helix's instances, ideal
states, current states, external views, messages; Pinot's property store; the controller
election) over a ``ZnodeStore`` (``engine.clusterstate.znode_store``): every call bounded,
read-modify-write by compare-and-set.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NotEmptyError

from engine.clusterstate.errors import ZooKeeperUnavailableError
from engine.clusterstate.external_view import compute_external_view
from engine.clusterstate.paths import ClusterPaths
from engine.clusterstate.records import (
    CurrentState,
    InstanceConfig,
    LiveInstance,
    Message,
    ResourceAssignment,
    SegmentZKMetadata,
    schema_from_record,
    schema_to_record,
    table_config_from_record,
    table_config_to_record,
)
from engine.clusterstate.znode_store import DEFAULT_MAX_ZNODE_BYTES, ZnodeStore, session_id_of
from engine.clusterstate.znrecord import ZNRecord


class ClusterStore(ZnodeStore):
    def __init__(self, client: KazooClient, cluster_name: str, *, timeout_s: float = 10.0,
                 max_znode_bytes: int = DEFAULT_MAX_ZNODE_BYTES):  # fmt: skip
        super().__init__(client, timeout_s=timeout_s, max_znode_bytes=max_znode_bytes)
        self.paths = ClusterPaths(cluster_name)

    # --- cluster ---------------------------------------------------------------------------
    def ensure_cluster(self) -> None:
        """Create the persistent skeleton of the cluster (idempotent)."""
        for path in self.paths.skeleton():
            self.ensure_path(path)
        if self.get_raw(self.paths.cluster_config) is None:
            record = ZNRecord(
                id=self.paths.cluster_name,
                simple_fields={
                    "allowParticipantAutoJoin": "true",
                    "enable.case.insensitive": "true",
                },
            )
            with contextlib.suppress(NodeExistsError):
                self._wait(
                    lambda: self.client.create_async(self.paths.cluster_config, record.to_bytes())
                )

    def cluster_config(self) -> dict[str, str]:
        record, _ = self.get_record(self.paths.cluster_config)
        return dict(record.simple_fields) if record else {}

    def update_cluster_config(self, set_keys: dict[str, str], delete_keys=()) -> dict[str, str]:
        def change(record: ZNRecord | None) -> ZNRecord:
            record = record or ZNRecord(id=self.paths.cluster_name)
            record.simple_fields.update({k: str(v) for k, v in set_keys.items()})
            for key in delete_keys:
                record.simple_fields.pop(key, None)
            return record

        return dict(self.update(self.paths.cluster_config, change).simple_fields)

    # --- instances -------------------------------------------------------------------------
    def instance_ids(self) -> list[str]:
        return self.children(self.paths.participants)

    def instance_config(self, instance_id: str) -> InstanceConfig | None:
        record, _ = self.get_record(self.paths.instance_config(instance_id))
        return InstanceConfig.from_record(record) if record else None

    def instance_configs(self) -> dict[str, InstanceConfig]:
        out = {}
        for instance_id in self.instance_ids():
            config = self.instance_config(instance_id)
            if config is not None:
                out[instance_id] = config
        return out

    def put_instance_config(self, config: InstanceConfig) -> None:
        self.put_record(self.paths.instance_config(config.instance_id), config.to_record())
        self.ensure_path(self.paths.current_states(config.instance_id))
        self.ensure_path(self.paths.messages(config.instance_id))

    def delete_instance(self, instance_id: str) -> None:
        self.delete(self.paths.instance_config(instance_id))
        self.delete(self.paths.instance(instance_id), recursive=True)

    def live_instances(self) -> dict[str, LiveInstance]:
        out = {}
        for instance_id in self.children(self.paths.live_instances):
            record, _ = self.get_record(self.paths.live_instance(instance_id))
            if record is not None:
                out[instance_id] = LiveInstance.from_record(record)
        return out

    def register_live_instance(self, instance_id: str) -> LiveInstance:
        """Write this client's ephemeral ``LIVEINSTANCES/<id>`` (replacing a stale one)."""
        live = LiveInstance(
            instance_id, session_id_of(self.client), socket.gethostname(), os.getpid()
        )
        self.put_record(self.paths.live_instance(instance_id), live.to_record(), ephemeral=True)
        return live

    # --- ideal states, current states, external views --------------------------------------
    def resources(self) -> list[str]:
        return self.children(self.paths.ideal_states)

    def ideal_state(self, resource: str) -> ResourceAssignment | None:
        record, _ = self.get_record(self.paths.ideal_state(resource))
        return ResourceAssignment.from_record(record) if record else None

    def put_ideal_state(self, ideal: ResourceAssignment) -> None:
        self.put_record(self.paths.ideal_state(ideal.resource), ideal.to_record())

    def update_ideal_state(
        self,
        resource: str,
        change: Callable[[ResourceAssignment], ResourceAssignment | None],
        *,
        create: bool = True,
    ) -> ResourceAssignment | None:
        """Change an ideal state atomically; ``change`` gets a copy and returns the new one
        (or None for no change). Without ``create`` a missing ideal state stays missing."""

        def on_record(record: ZNRecord | None) -> ZNRecord | None:
            if record is None and not create:
                return None
            current = (
                ResourceAssignment.from_record(record) if record else ResourceAssignment(resource)
            )
            new = change(current)
            return new.to_record() if new is not None else None

        record = self.update(self.paths.ideal_state(resource), on_record)
        return ResourceAssignment.from_record(record) if record else None

    def delete_ideal_state(self, resource: str) -> None:
        self.delete(self.paths.ideal_state(resource))

    def external_view(self, resource: str) -> ResourceAssignment | None:
        record, _ = self.get_record(self.paths.external_view(resource))
        return ResourceAssignment.from_record(record) if record else None

    def put_external_view(self, view: ResourceAssignment) -> None:
        self.put_record(self.paths.external_view(view.resource), view.to_record())

    def delete_external_view(self, resource: str) -> None:
        self.delete(self.paths.external_view(resource))

    def put_current_state(self, instance_id: str, state: CurrentState) -> None:
        path = self.paths.current_state(instance_id, state.session_id, state.resource)
        self.put_record(path, state.to_record())

    def current_states(self, instance_id: str, session_id: str) -> dict[str, CurrentState]:
        """The current states an instance wrote in session ``session_id``, by resource."""
        base = self.paths.current_states(instance_id, session_id)
        out = {}
        for resource in self.children(base):
            record, _ = self.get_record(f"{base}/{resource}")
            if record is not None:
                out[resource] = CurrentState.from_record(record)
        return out

    def live_current_states(self) -> dict[str, dict[str, CurrentState]]:
        """instance -> resource -> current state, for live instances' live sessions only."""
        return {
            instance_id: self.current_states(instance_id, live.session_id)
            for instance_id, live in self.live_instances().items()
        }

    def refresh_external_views(self, resources: list[str] | None = None) -> dict[str, bool]:
        """Recompute external views from the live current states and write those that changed.

        Returns resource -> whether its external view was rewritten. A resource whose ideal
        state is gone loses its external view too."""
        states = self.live_current_states()
        wanted = self.resources() if resources is None else resources
        changed = {}
        for resource in wanted:
            ideal = self.ideal_state(resource)
            view = self.external_view(resource)
            if ideal is None:
                if view is not None:
                    self.delete_external_view(resource)
                    changed[resource] = True
                continue
            new = compute_external_view(resource, states)
            if view is None or view.segments != new.segments:
                self.put_external_view(new)
                changed[resource] = True
            else:
                changed[resource] = False
        for resource in self.children(self.paths.external_views):
            if resources is None and resource not in wanted:
                self.delete_external_view(resource)
                changed[resource] = True
        return changed

    def send_message(self, instance_id: str, message: Message) -> None:
        self.put_record(self.paths.message(instance_id, message.message_id), message.to_record())

    def messages(self, instance_id: str) -> list[Message]:
        base = self.paths.messages(instance_id)
        out = []
        for child in self.children(base):
            record, _ = self.get_record(f"{base}/{child}")
            if record is not None:
                out.append(Message.from_record(record))
        return out

    # --- property store --------------------------------------------------------------------
    def schema_names(self) -> list[str]:
        return self.children(self.paths.schemas)

    def schema(self, name: str) -> dict | None:
        record, _ = self.get_record(self.paths.schema(name))
        return schema_from_record(record) if record else None

    def put_schema(self, schema: dict) -> None:
        record = schema_to_record(schema)
        self.put_record(self.paths.schema(record.id), record)

    def delete_schema(self, name: str) -> None:
        self.delete(self.paths.schema(name))

    def table_names_with_type(self) -> list[str]:
        return self.children(self.paths.table_configs)

    def table_config(self, table_with_type: str) -> dict | None:
        record, _ = self.get_record(self.paths.table_config(table_with_type))
        return table_config_from_record(record) if record else None

    def put_table_config(self, config: dict) -> None:
        record = table_config_to_record(config)
        self.put_record(self.paths.table_config(record.id), record)

    def delete_table_config(self, table_with_type: str) -> None:
        self.delete(self.paths.table_config(table_with_type))

    def segment_names(self, table_with_type: str) -> list[str]:
        return self.children(self.paths.table_segments(table_with_type))

    def segment_metadata(self, table_with_type: str, segment: str) -> SegmentZKMetadata | None:
        record, _ = self.get_record(self.paths.segment(table_with_type, segment))
        return SegmentZKMetadata.from_record(record, table_with_type) if record else None

    def put_segment_metadata(self, metadata: SegmentZKMetadata) -> None:
        path = self.paths.segment(metadata.table_name_with_type, metadata.segment_name)
        self.put_record(path, metadata.to_record())

    def delete_segment_metadata(self, table_with_type: str, segment: str) -> None:
        path = self.paths.segment(table_with_type, segment)
        try:
            self.delete(path)
        except NotEmptyError:  # a znode written under it by hand: it goes too
            self.delete(path, recursive=True)

    # --- controller ------------------------------------------------------------------------
    def controller_leader(self) -> str | None:
        """The instance id of the leading controller, or None while there is none.

        The election is kazoo's (lock contenders under ``CONTROLLER/LEADER``); the first
        contender holds the lock."""
        from kazoo.recipe.election import Election

        if not self.client.connected:
            raise ZooKeeperUnavailableError("ZooKeeper is not reachable; retry shortly")
        try:
            contenders = Election(self.client, self.paths.controller_leader).contenders()
        except KazooException as exc:
            raise ZooKeeperUnavailableError(f"cannot read the controller election: {exc}") from exc
        return contenders[0] if contenders else None
