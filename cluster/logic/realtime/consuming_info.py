"""``GET /tables/{t}/consumingSegmentsInfo``: the servers' reports merged into Pinot's shape,
``{"_segmentToConsumingInfoMap": {segment: [per-server info]}, "serversFailingToRespond",
"serversUnparsableRespond"}`` (the leading underscore is Pinot's: its Java field name)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import requests
from django.conf import settings

from cluster.logic.realtime.pause import consuming_segments
from cluster.logic.realtime.stream_status import stream_error
from engine.clusterstate import ClusterStore
from engine.runtime.service_auth import CONTROLLER_SERVER_ADMIN, auth_headers

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


SERVER_TIMEOUT_S = 10.0  # a server's own answer may wait up to 2 s per segment on Kafka


def _ask(url: str, timeout_s: float) -> tuple[object, str | None]:
    """A server's answer: (parsed JSON, None), (None, why) when it did not answer, or
    (the text, why) when it answered something that is not JSON."""
    try:
        response = requests.get(url, timeout=timeout_s, headers=auth_headers(
            settings.PINOT_PROPERTIES, CONTROLLER_SERVER_ADMIN))  # fmt: skip
    except requests.RequestException as exc:
        return None, f"no answer: {type(exc).__name__}"
    if response.status_code != 200:
        return None, f"HTTP {response.status_code}: {response.text[:200]}"
    try:
        return response.json(), None
    except ValueError:
        return response.text[:200], "the answer is not JSON"


def collect_consuming_info(store: ClusterStore, table: str, *,
                           timeout_s: float = SERVER_TIMEOUT_S) -> dict:  # fmt: skip
    """Ask every server holding a CONSUMING replica of ``table`` (with type) for its
    SegmentConsumerInfo, in parallel, each within ``timeout_s``; Pinot's merged shape. Ours
    beyond it: ``serverErrors`` (server -> why) when some server failed, and
    ``streamIngestionError`` when the table's topic cannot be read."""
    ideal = store.ideal_state(table)
    segments = consuming_segments(ideal)
    servers = sorted({
        server for segment in segments
        for server, state in ideal.segments[segment].items() if state == "CONSUMING"
    })  # fmt: skip
    answers: dict[str, object] = {}
    errors: dict[str, str] = {}
    urls = {}
    for server in servers:
        config = store.instance_config(server)
        if config is None or config.admin_port <= 0:
            answers[server] = None
            errors[server] = "no admin port in its instance config"
            continue
        urls[server] = (
            f"http://{config.host}:{config.admin_port}/tables/{table}/consumingSegmentsInfo"
        )
    if urls:
        with ThreadPoolExecutor(max_workers=min(16, len(urls))) as pool:
            futures = {s: pool.submit(_ask, url, timeout_s) for s, url in urls.items()}
            for server, future in futures.items():
                answers[server], why = future.result()
                if why is not None:
                    errors[server] = why
    merged = merge_consuming_info(segments, answers)
    if errors:
        merged["serverErrors"] = dict(sorted(errors.items()))
    error = stream_error(ideal)
    if error is not None:
        merged["streamIngestionError"] = error
    return merged
