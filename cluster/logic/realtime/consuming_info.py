"""``GET /tables/{t}/consumingSegmentsInfo``: the servers' reports merged into Pinot's shape,
``{"_segmentToConsumingInfoMap": {segment: [per-server info]}, "serversFailingToRespond",
"serversUnparsableRespond"}`` (the leading underscore is Pinot's: its Java field name)."""

from __future__ import annotations

from cluster.logic import server_admin
from cluster.logic.realtime.pause import consuming_segments
from cluster.logic.realtime.stream_status import stream_error
from engine.clusterstate import ClusterStore

_INFO_KEYS = ("consumerState", "lastConsumedTimestamp", "partitionToOffsetMap",
              "partitionOffsetInfo")  # fmt: skip
# beyond Pinot's shape, passed on when a server sends them (engine.realtime.consuming_info)
_OUR_KEYS = ("rowsWithErrors", "stalled", "stalledSinceMs")


def merge_consuming_info(consuming_segments: list[str], answers: dict[str, object]) -> dict:
    """``consuming_segments``: the table's CONSUMING segments (ideal state). ``answers``:
    server id -> its answer, a list of SegmentConsumerInfo dicts, None when the server did
    not answer, anything else when it answered something unreadable. Segments are sorted by
    name; a CONSUMING segment no server consumes maps to []."""
    merged: dict[str, list[dict]] = {name: [] for name in consuming_segments}
    failing = unparsable = 0
    for server in sorted(answers):
        answer = answers[server]
        if answer is None:
            failing += 1
            continue
        if not isinstance(answer, list) or not all(
            isinstance(i, dict) and "segmentName" in i for i in answer
        ):
            unparsable += 1
            continue
        for info in answer:
            entry = {"serverName": server, **{k: info.get(k) for k in _INFO_KEYS}}
            entry.update({k: info[k] for k in _OUR_KEYS if k in info})
            merged.setdefault(info["segmentName"], []).append(entry)
    return {
        "_segmentToConsumingInfoMap": {name: merged[name] for name in sorted(merged)},
        "serversFailingToRespond": failing,
        "serversUnparsableRespond": unparsable,
    }


# a server's own answer may wait up to 2 s per segment on Kafka
SERVER_TIMEOUT_S = server_admin.SERVER_TIMEOUT_S


def collect_consuming_info(store: ClusterStore, table: str, *,
                           timeout_s: float = SERVER_TIMEOUT_S) -> dict:  # fmt: skip
    """Ask every server holding a CONSUMING replica of ``table`` (with type) for its
    SegmentConsumerInfo, in parallel, each within ``timeout_s``; Pinot's merged shape. Ours
    beyond it: ``serverErrors`` (server -> why, never what it answered) when some server
    failed, and ``streamIngestionError`` when the table's topic cannot be read. Servers are
    asked as ``cluster.logic.server_admin`` allows."""
    ideal = store.ideal_state(table)
    segments = consuming_segments(ideal)
    servers = sorted({
        server for segment in segments
        for server, state in ideal.segments[segment].items() if state == "CONSUMING"
    })  # fmt: skip
    asked = server_admin.ask_servers(
        store, servers, server_admin.table_path(table, "consumingSegmentsInfo"), timeout_s
    )
    answers = {server: answer for server, (answer, _) in asked.items()}
    errors = {server: why for server, (_, why) in asked.items() if why is not None}
    merged = merge_consuming_info(segments, answers)
    if errors:
        merged["serverErrors"] = dict(sorted(errors.items()))
    error = stream_error(ideal)
    if error is not None:
        merged["streamIngestionError"] = error
    return merged
