"""``GET /tables/{t}/consumingSegmentsInfo``: the servers' reports merged into Pinot's shape,
``{"_segmentToConsumingInfoMap": {segment: [per-server info]}, "serversFailingToRespond",
"serversUnparsableRespond"}`` (the leading underscore is Pinot's: its Java field name)."""

from __future__ import annotations

_INFO_KEYS = ("consumerState", "lastConsumedTimestamp", "partitionToOffsetMap",
              "partitionOffsetInfo")  # fmt: skip


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
            if "rowsWithErrors" in info:
                entry["rowsWithErrors"] = info["rowsWithErrors"]
            merged.setdefault(info["segmentName"], []).append(entry)
    return {
        "_segmentToConsumingInfoMap": {name: merged[name] for name in sorted(merged)},
        "serversFailingToRespond": failing,
        "serversUnparsableRespond": unparsable,
    }
