"""The HTTP completion client: Pinot's paths, parameters and multipart parts, and response
parsing (unit test against a local stand-in HTTP server; the controller's real endpoints are
tested in tests/cluster/test_llc_api.py, and the whole protocol between real server and
controller processes in tests/cluster_e2e/test_realtime.py)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import orjson
import pytest

from engine.realtime import completion as proto
from engine.realtime.completion import CommitStats, CompletionResponse, HttpCompletionClient


@pytest.fixture
def controller():
    seen: list[dict] = []
    replies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bytes = b""):
            url = urlparse(self.path)
            seen.append({"method": self.command, "path": url.path,
                         "query": {k: v[0] for k, v in parse_qs(url.query).items()},
                         "body": body, "type": self.headers.get("Content-Type", "")})  # fmt: skip
            reply = replies.pop(0) if replies else b'{"status":"HOLD"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def do_GET(self):
            self._answer()

        def do_POST(self):
            self._answer(self.rfile.read(int(self.headers["Content-Length"])))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", seen, replies
    server.shutdown()
    server.server_close()


def test_requests_and_responses_follow_pinot(controller, tmp_path):
    url, seen, replies = controller
    client = HttpCompletionClient("Server_127.0.0.1_8098", lambda: url)
    replies.append(
        b'{"status":"COMMIT","streamPartitionMsgOffset":"1234","buildTimeSec":126,'
        b'"isSplitCommitType":true,"controllerVipUrl":"http://c:9000"}'
    )
    reply = client.segment_consumed("t__0__3__20260101T0000Z", 1234, proto.REASON_ROW_LIMIT,
                                    CommitStats(row_count=100, memory_used_bytes=2048))  # fmt: skip
    assert reply == CompletionResponse(proto.COMMIT, 1234, 126, True, None, "http://c:9000")
    assert seen[-1]["path"] == "/segmentConsumed"
    assert seen[-1]["query"] == {
        "name": "t__0__3__20260101T0000Z", "instance": "Server_127.0.0.1_8098",
        "streamPartitionMsgOffset": "1234", "reason": "rowLimit", "rowCount": "100",
        "memoryUsedBytes": "2048",
    }  # fmt: skip

    tar = tmp_path / "seg.tar.gz"
    tar.write_bytes(b"tarball-bytes")
    replies.append(b'{"status":"UPLOAD_SUCCESS","streamPartitionMsgOffset":"1234",'
                   b'"segmentLocation":"/data/t/seg.tmp.abc"}')  # fmt: skip
    reply = client.segment_upload("t__0__3__20260101T0000Z", 1234, tar)
    assert (reply.status, reply.segment_location) == (proto.UPLOAD_SUCCESS, "/data/t/seg.tmp.abc")
    assert seen[-1]["method"] == "POST" and seen[-1]["path"] == "/segmentUpload"
    assert b"tarball-bytes" in seen[-1]["body"] and "multipart/form-data" in seen[-1]["type"]

    seg_dir = tmp_path / "seg"
    seg_dir.mkdir()
    (seg_dir / "metadata.properties").write_text("segment.name = x\n")
    (seg_dir / "creation.meta").write_bytes(b'{"crc": 1}')
    replies.append(b'{"status":"COMMIT_SUCCESS","streamPartitionMsgOffset":"1234"}')
    reply = client.segment_commit_end("t__0__3__20260101T0000Z", 1234, "/data/t/seg.tmp.abc",
                                      seg_dir, CommitStats(build_time_ms=50))  # fmt: skip
    assert reply.status == proto.COMMIT_SUCCESS
    last = seen[-1]
    assert last["path"] == "/segmentCommitEndWithMetadata"
    assert last["query"]["location"] == "/data/t/seg.tmp.abc"
    assert last["query"]["buildTimeMillis"] == "50"
    assert b'name="metadata.properties"' in last["body"] and b'name="creation.meta"' in last["body"]

    replies.append(b'{"status":"PROCESSED","streamPartitionMsgOffset":null}')
    reply = client.segment_stopped_consuming("t__0__3__20260101T0000Z", 77, "PermanentStreamError")
    assert reply == CompletionResponse(proto.PROCESSED)
    assert seen[-1]["path"] == "/segmentStoppedConsuming"
    assert seen[-1]["query"]["reason"] == "PermanentStreamError"


def test_failures_and_odd_answers_are_not_sent(controller):
    url, _, replies = controller
    assert (
        HttpCompletionClient("S", lambda: None).segment_consumed("s", 1, "rowLimit").status
        == proto.NOT_SENT
    )
    assert (
        HttpCompletionClient("S", lambda: "http://127.0.0.1:1").segment_commit_start("s", 1).status
        == proto.NOT_SENT
    )
    client = HttpCompletionClient("S", lambda: url)
    replies.extend([b"<html>oops</html>", b'{"status":"MAYBE"}', b'{"status":"HOLD","offset":5}'])
    assert client.segment_consumed("s", 1, "rowLimit").status == proto.NOT_SENT
    assert client.segment_consumed("s", 1, "rowLimit").status == proto.NOT_SENT
    assert client.segment_consumed("s", 1, "rowLimit") == CompletionResponse(proto.HOLD, 5)


def test_response_json_round_trip():
    response = CompletionResponse(proto.CATCH_UP, 99)
    assert response.to_json() == {"status": "CATCH_UP", "streamPartitionMsgOffset": "99",
                                  "buildTimeSec": -1, "isSplitCommitType": True}  # fmt: skip
    assert CompletionResponse.from_json(orjson.dumps(response.to_json())) == response
    assert CompletionResponse(proto.HOLD).to_json()["streamPartitionMsgOffset"] is None
