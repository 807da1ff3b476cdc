"""consumingSegmentsInfo: server answers merged into Pinot's shape (unit test)."""

from __future__ import annotations

from cluster.logic.realtime.consuming_info import merge_consuming_info


def info(segment: str, offset: str) -> dict:
    return {
        "segmentName": segment,
        "consumerState": "CONSUMING",
        "lastConsumedTimestamp": 1754049600000,
        "partitionToOffsetMap": {"0": offset},
        "partitionOffsetInfo": {
            "currentOffsetsMap": {"0": offset},
            "recordsLagMap": {"0": "10"},
            "latestUpstreamOffsetMap": {"0": "1244"},
            "availabilityLagMsMap": {"0": "350"},
        },
        "rowsWithErrors": 2,
        "stalled": offset == "1230",
        "stalledSinceMs": 1754049500000 if offset == "1230" else None,
    }


def test_merge_sorts_segments_and_counts_failures():
    merged = merge_consuming_info(
        ["t__1__0__20260801T1200Z", "t__0__5__20260801T1200Z"],
        {
            "Server_b_8098": [info("t__0__5__20260801T1200Z", "1234")],
            "Server_a_8098": [info("t__0__5__20260801T1200Z", "1230")],
            "Server_c_8098": None,
            "Server_d_8098": {"oops": True},
        },
    )
    assert list(merged) == [
        "_segmentToConsumingInfoMap", "serversFailingToRespond", "serversUnparsableRespond"
    ]  # fmt: skip
    segments = merged["_segmentToConsumingInfoMap"]
    assert list(segments) == ["t__0__5__20260801T1200Z", "t__1__0__20260801T1200Z"]
    assert segments["t__1__0__20260801T1200Z"] == []  # CONSUMING, but no consumer reported it
    first, second = segments["t__0__5__20260801T1200Z"]
    assert (first["serverName"], second["serverName"]) == ("Server_a_8098", "Server_b_8098")
    assert first["partitionOffsetInfo"]["currentOffsetsMap"] == {"0": "1230"}
    assert "segmentName" not in first and first["rowsWithErrors"] == 2
    assert (first["stalled"], first["stalledSinceMs"]) == (True, 1754049500000)
    assert (second["stalled"], second["stalledSinceMs"]) == (False, None)
    assert (merged["serversFailingToRespond"], merged["serversUnparsableRespond"]) == (1, 1)
