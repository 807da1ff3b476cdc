"""The cluster state in ZooKeeper, shared by the controller, servers and brokers.

Nothing here imports Django or the controller; engine processes use it directly. The layout
follows Helix, rooted at ``/<clusterName>`` (default ``/PinotCluster``); every znode holds a
ZNRecord JSON ``{"id", "simpleFields", "mapFields", "listFields"}`` (see ``znrecord``)::

    CONFIGS/CLUSTER/<cluster>          cluster configs (simpleFields; /cluster/configs)
    CONFIGS/PARTICIPANT/<instance>     InstanceConfig: HELIX_HOST, HELIX_PORT, HELIX_ENABLED,
                                       adminPort, grpcPort, queryServicePort; listFields TAG_LIST
    LIVEINSTANCES/<instance>           ephemeral, written by each process: SESSION_ID, LIVE_INSTANCE
    INSTANCES/<instance>/CURRENTSTATES/<sessionId>/<table_TYPE>
                                       written by the instance: mapFields segment ->
                                       {"CURRENT_STATE": ONLINE|CONSUMING|OFFLINE|ERROR}
    INSTANCES/<instance>/MESSAGES/<msgId>
                                       requests to the instance (SUB_MSG_TYPE SEGMENT_RELOAD,
                                       SEGMENT_RESET, SEGMENT_REFRESH); it deletes them when done
    IDEALSTATES/<table_TYPE>           written by the controller: mapFields segment ->
                                       {instance: ONLINE|CONSUMING|OFFLINE}; HELIX_ENABLED false
                                       when the table is disabled
    IDEALSTATES/brokerResource         mapFields table_TYPE -> {broker: ONLINE}
    EXTERNALVIEW/<table_TYPE>          aggregated by the leading controller from the live
                                       instances' current states (same shape as the ideal state)
    CONTROLLER/LEADER                  kazoo election: contenders are children; the first holds
                                       the lock and also writes its id as this node's data
    PROPERTYSTORE/SCHEMAS/<schema>     simpleFields schemaJSON
    PROPERTYSTORE/CONFIGS/TABLE/<table_TYPE>
                                       one simple field per top-level table config key
                                       (objects JSON-encoded; tableName is the name with type)
    PROPERTYSTORE/SEGMENTS/<table_TYPE>/<segment>
                                       segment.crc, segment.start.time, segment.end.time,
                                       segment.time.unit, segment.total.docs,
                                       segment.download.url, segment.push.time,
                                       segment.refresh.time, segment.size.in.bytes, ...
    PROPERTYSTORE/CONTROLLER_JOBS/<jobType>/<jobId>
                                       rebalance and reload jobs with their progress
    PROPERTYSTORE/CONTROLLER_METRICS/<table_TYPE>
                                       the SegmentStatusChecker's last report for the table
    PROPERTYSTORE/SEGMENT_LINEAGE/<table_TYPE>
                                       segment replacements (listFields entry id ->
                                       [segmentsFrom, segmentsTo, state, timestamp]; see lineage)

How a server takes part: it writes its ``CONFIGS/PARTICIPANT`` entry once and its ephemeral
``LIVEINSTANCES`` entry each session, watches the ideal states of its tables, loads each
segment assigned to it (downloading ``segment.download.url``), and writes the resulting state
into its current state under its session id. A segment that leaves the ideal state is
dropped and removed from the current state. A change of ``segment.crc`` in the segment
metadata means the segment was refreshed and must be downloaded again.
"""

from engine.clusterstate.errors import (
    ClusterStateError,
    ConcurrentUpdateError,
    ZnodeTooLargeError,
    ZooKeeperUnavailableError,
)
from engine.clusterstate.external_view import compute_external_view
from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    lineage_consistent_segments,
)
from engine.clusterstate.paths import BROKER_RESOURCE, ClusterPaths
from engine.clusterstate.records import (
    SERVING_STATES,
    CurrentState,
    ExternalView,
    IdealState,
    InstanceConfig,
    LiveInstance,
    Message,
    ResourceAssignment,
    SegmentState,
    schema_from_record,
    schema_to_record,
    table_config_from_record,
    table_config_to_record,
)
from engine.clusterstate.segment_metadata import SegmentZKMetadata
from engine.clusterstate.store import ClusterStore
from engine.clusterstate.tags import InstanceType
from engine.clusterstate.znode_store import session_id_of
from engine.clusterstate.znrecord import ZNRecord

# a table name's type suffix: Pinot's TableNameBuilder, in engine.spi
from engine.spi.table_name import (
    OFFLINE,
    REALTIME,
    TABLE_TYPES,
    split_table_name,
    table_name_with_type,
)

__all__ = [
    "BROKER_RESOURCE",
    "OFFLINE",
    "REALTIME",
    "SERVING_STATES",
    "TABLE_TYPES",
    "ClusterPaths",
    "ClusterStateError",
    "ClusterStore",
    "ConcurrentUpdateError",
    "CurrentState",
    "ExternalView",
    "IdealState",
    "InstanceConfig",
    "InstanceType",
    "LineageEntry",
    "LineageEntryState",
    "LiveInstance",
    "Message",
    "ResourceAssignment",
    "SegmentLineage",
    "SegmentState",
    "SegmentZKMetadata",
    "ZNRecord",
    "ZnodeTooLargeError",
    "ZooKeeperUnavailableError",
    "compute_external_view",
    "lineage_consistent_segments",
    "schema_from_record",
    "schema_to_record",
    "session_id_of",
    "split_table_name",
    "table_config_from_record",
    "table_config_to_record",
    "table_name_with_type",
]
