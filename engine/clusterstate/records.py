"""Typed views of the ZNRecords in the cluster layout, each with a lossless codec.

Field names follow Helix/Pinot so that their tools read our znodes: instance configs use
``HELIX_HOST``/``HELIX_PORT``/``HELIX_ENABLED`` and the ``TAG_LIST`` list field; ideal states
and external views map segment -> instance -> state; current states map segment ->
``{"CURRENT_STATE": state}``; segment metadata uses Pinot's ``segment.*`` keys.
"""

from __future__ import annotations

import dataclasses
import enum

import orjson

from engine.clusterstate.errors import ClusterStateError
from engine.clusterstate.segment_metadata import SegmentZKMetadata  # noqa: F401 (its old home)
from engine.clusterstate.tags import InstanceType
from engine.clusterstate.znrecord import ZNRecord, int_field
from engine.common.clock import now_ms
from engine.spi.table_name import split_table_name


class SegmentState(enum.StrEnum):
    """Helix's SegmentOnlineOfflineStateModel states."""

    ONLINE = "ONLINE"
    CONSUMING = "CONSUMING"
    OFFLINE = "OFFLINE"
    ERROR = "ERROR"
    DROPPED = "DROPPED"


SERVING_STATES = frozenset({SegmentState.ONLINE.value, SegmentState.CONSUMING.value})


@dataclasses.dataclass
class InstanceConfig:
    instance_id: str
    host: str
    port: int
    tags: list[str] = dataclasses.field(default_factory=list)
    enabled: bool = True
    # Pinot's optional per-instance ports; -1 when unused
    admin_port: int = -1
    grpc_port: int = -1
    query_service_port: int = -1

    @property
    def type(self) -> InstanceType | None:
        return InstanceType.of_instance(self.instance_id)

    def to_record(self) -> ZNRecord:
        return ZNRecord(
            id=self.instance_id,
            simple_fields={
                "HELIX_HOST": self.host,
                "HELIX_PORT": str(self.port),
                "HELIX_ENABLED": "true" if self.enabled else "false",
                "HELIX_ENABLED_TIMESTAMP": str(now_ms()),
                "adminPort": str(self.admin_port),
                "grpcPort": str(self.grpc_port),
                "queryServicePort": str(self.query_service_port),
            },
            list_fields={"TAG_LIST": list(self.tags)},
        )

    @classmethod
    def from_record(cls, record: ZNRecord) -> InstanceConfig:
        simple = record.simple_fields
        return cls(
            instance_id=record.id,
            host=simple.get("HELIX_HOST", ""),
            port=int_field(simple.get("HELIX_PORT"), -1),
            tags=list(record.list_fields.get("TAG_LIST", [])),
            enabled=simple.get("HELIX_ENABLED", "true").lower() == "true",
            admin_port=int_field(simple.get("adminPort"), -1),
            grpc_port=int_field(simple.get("grpcPort"), -1),
            query_service_port=int_field(simple.get("queryServicePort"), -1),
        )

    def to_pinot_json(self) -> dict:
        """The shape of Pinot's ``GET /instances/{id}``."""
        return {
            "instanceName": self.instance_id,
            "hostName": self.host,
            "enabled": self.enabled,
            "port": str(self.port),
            "tags": list(self.tags),
            "pools": None,
            "grpcPort": self.grpc_port,
            "adminPort": self.admin_port,
            "queryServicePort": self.query_service_port,
            "queryMailboxPort": -1,
            "systemResourceInfo": None,
        }


@dataclasses.dataclass
class LiveInstance:
    """The ephemeral ``LIVEINSTANCES/<id>`` node: which ZooKeeper session the process holds."""

    instance_id: str
    session_id: str
    host: str = ""
    pid: int = 0

    def to_record(self) -> ZNRecord:
        return ZNRecord(
            id=self.instance_id,
            simple_fields={
                "SESSION_ID": self.session_id,
                "LIVE_INSTANCE": f"{self.pid}@{self.host}",
                "HELIX_VERSION": "sprig",
            },
        )

    @classmethod
    def from_record(cls, record: ZNRecord) -> LiveInstance:
        pid, _, host = record.simple_fields.get("LIVE_INSTANCE", "0@").partition("@")
        return cls(record.id, record.simple_fields.get("SESSION_ID", ""), host, int_field(pid, 0))


_IDEAL_STATE_KEYS = frozenset(
    {"BATCH_MESSAGE_MODE", "IDEAL_STATE_MODE", "REBALANCE_MODE", "NUM_PARTITIONS",
     "STATE_MODEL_DEF_REF", "STATE_MODEL_FACTORY_NAME", "HELIX_ENABLED", "REPLICAS",
     "INSTANCE_GROUP_TAG"}
)  # fmt: skip


@dataclasses.dataclass
class ResourceAssignment:
    """An ideal state or external view: segment -> instance -> state, plus Helix's fields."""

    resource: str
    segments: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    enabled: bool = True
    replicas: str = ""
    instance_group_tag: str = ""
    # other simple fields (e.g. Pinot's pauseState / isTablePaused), kept through updates
    extra_fields: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_record(self) -> ZNRecord:
        simple = dict(self.extra_fields)
        simple |= {
            "BATCH_MESSAGE_MODE": "false",
            "IDEAL_STATE_MODE": "CUSTOMIZED",
            "REBALANCE_MODE": "CUSTOMIZED",
            "NUM_PARTITIONS": str(len(self.segments)),
            "STATE_MODEL_DEF_REF": "SegmentOnlineOfflineStateModel",
            "STATE_MODEL_FACTORY_NAME": "DEFAULT",
            "HELIX_ENABLED": "true" if self.enabled else "false",
        }
        if self.replicas:
            simple["REPLICAS"] = self.replicas
        if self.instance_group_tag:
            simple["INSTANCE_GROUP_TAG"] = self.instance_group_tag
        return ZNRecord(
            id=self.resource,
            simple_fields=simple,
            map_fields={s: dict(m) for s, m in sorted(self.segments.items())},
        )

    @classmethod
    def from_record(cls, record: ZNRecord) -> ResourceAssignment:
        simple = record.simple_fields
        return cls(
            resource=record.id,
            segments={s: dict(m) for s, m in record.map_fields.items()},
            enabled=simple.get("HELIX_ENABLED", "true").lower() == "true",
            replicas=simple.get("REPLICAS", ""),
            instance_group_tag=simple.get("INSTANCE_GROUP_TAG", ""),
            extra_fields={k: v for k, v in simple.items() if k not in _IDEAL_STATE_KEYS},
        )

    def instances(self) -> set[str]:
        return {i for m in self.segments.values() for i in m}

    def segments_per_instance(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for segment, replicas in sorted(self.segments.items()):
            for instance in replicas:
                out.setdefault(instance, []).append(segment)
        return out


IdealState = ResourceAssignment
ExternalView = ResourceAssignment


@dataclasses.dataclass
class CurrentState:
    """``INSTANCES/<id>/CURRENTSTATES/<session>/<resource>``, written by the instance itself:
    the state each of its segments of one resource is in."""

    resource: str
    session_id: str
    segments: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_record(self) -> ZNRecord:
        return ZNRecord(
            id=self.resource,
            simple_fields={
                "SESSION_ID": self.session_id,
                "STATE_MODEL_DEF": "SegmentOnlineOfflineStateModel",
                "STATE_MODEL_FACTORY_NAME": "DEFAULT",
                "BUCKET_SIZE": "0",
            },
            map_fields={s: {"CURRENT_STATE": st} for s, st in sorted(self.segments.items())},
        )

    @classmethod
    def from_record(cls, record: ZNRecord) -> CurrentState:
        return cls(
            resource=record.id,
            session_id=record.simple_fields.get("SESSION_ID", ""),
            segments={
                s: m.get("CURRENT_STATE", SegmentState.OFFLINE.value)
                for s, m in record.map_fields.items()
            },
        )


# Pinot's ForceCommitMessage: the CONSUMING segments of ``resource`` named (comma-joined) in
# the simple field ``segmentNames`` end consumption now and commit
FORCE_COMMIT_MESSAGE = "FORCE_COMMIT"
FORCE_COMMIT_SEGMENTS = "segmentNames"


@dataclasses.dataclass
class Message:
    """A message to one instance, at ``INSTANCES/<id>/MESSAGES/<msgId>``. The instance
    handles it and deletes the znode. ``sub_type`` is ``SEGMENT_RELOAD``, ``SEGMENT_RESET``,
    ``SEGMENT_REFRESH`` or ``FORCE_COMMIT``; ``segment`` empty means every segment of
    ``resource``."""

    message_id: str
    sub_type: str
    resource: str
    segment: str = ""
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_record(self) -> ZNRecord:
        simple = dict(self.extra)
        simple.update(
            {
                "MSG_ID": self.message_id,
                "MSG_TYPE": "USER_DEFINE_MSG",
                "SUB_MSG_TYPE": self.sub_type,
                "RESOURCE_NAME": self.resource,
                "PARTITION_NAME": self.segment,
                "CREATE_TIMESTAMP": str(now_ms()),
            }
        )
        return ZNRecord(id=self.message_id, simple_fields=simple)

    @classmethod
    def from_record(cls, record: ZNRecord) -> Message:
        simple = dict(record.simple_fields)
        base = {"MSG_ID", "MSG_TYPE", "SUB_MSG_TYPE", "RESOURCE_NAME", "PARTITION_NAME"}
        return cls(
            message_id=record.id,
            sub_type=simple.get("SUB_MSG_TYPE", ""),
            resource=simple.get("RESOURCE_NAME", ""),
            segment=simple.get("PARTITION_NAME", ""),
            extra={k: v for k, v in simple.items() if k not in base},
        )


# --- property-store documents ---------------------------------------------------------------
# Pinot keeps a schema as one JSON string under ``schemaJSON`` and a table config as one simple
# field per top-level key (objects and lists JSON-encoded).
_PLAIN_TABLE_KEYS = ("tableName", "tableType")


def schema_to_record(schema: dict) -> ZNRecord:
    return ZNRecord(
        id=str(schema["schemaName"]), simple_fields={"schemaJSON": orjson.dumps(schema).decode()}
    )


def schema_from_record(record: ZNRecord) -> dict:
    raw = record.simple_fields.get("schemaJSON")
    if raw is None:
        raise ClusterStateError(f"schema {record.id}: the ZNRecord has no schemaJSON field")
    return orjson.loads(raw)


def table_config_to_record(config: dict) -> ZNRecord:
    """``config`` is a Pinot table config JSON with ``tableName`` (raw) and ``tableType``."""
    table_type = str(config["tableType"]).upper()
    raw, _ = split_table_name(str(config["tableName"]))
    simple = {"tableName": f"{raw}_{table_type}", "tableType": table_type}
    for key, value in config.items():
        if key not in _PLAIN_TABLE_KEYS:
            simple[key] = orjson.dumps(value).decode()
    return ZNRecord(id=simple["tableName"], simple_fields=simple)


def table_config_from_record(record: ZNRecord) -> dict:
    simple = record.simple_fields
    config: dict = {
        "tableName": simple.get("tableName", record.id),
        "tableType": simple.get("tableType", split_table_name(record.id)[1] or ""),
    }
    for key, value in simple.items():
        if key not in _PLAIN_TABLE_KEYS:
            try:
                config[key] = orjson.loads(value)
            except orjson.JSONDecodeError as exc:
                raise ClusterStateError(f"table config {record.id}: field {key}: {exc}") from exc
    return config
