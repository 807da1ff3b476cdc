"""tasks.lineage_client against a scripted HTTP controller (a unit test: the real controller
is exercised by tests/cluster_e2e/test_segment_lineage.py): the paths, parameters and bodies
it sends, retries of end/revert on 503 and lost connections, no retry of start, and errors
that carry the controller's status and message."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tasks import lineage_client
from tasks.errors import SubtaskFailedError
from tasks.lineage_client import (
    LineageRequestError,
    end_replace_segments,
    revert_replace_segments,
    segment_lineage,
    start_replace_segments,
)


class ScriptedController:
    """Answers each request with the next (status, body) of ``script``; records requests."""

    def __init__(self, script: list[tuple[int, dict]]):
        self.script = list(script)
        self.requests: list[tuple[str, str, dict, object]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                owner.requests.append((self.command, url.path, params,
                                       json.loads(raw) if raw else None))  # fmt: skip
                status, body = owner.script.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def controller(monkeypatch):
    monkeypatch.setattr(lineage_client, "RETRY_PAUSE_S", 0.01)
    made = []

    def make(*script):
        made.append(ScriptedController(list(script)))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_start_sends_pinots_path_and_body(controller):
    server = controller((200, {"segmentLineageEntryId": "e-1"}))
    entry = start_replace_segments(server.url, "t", "OFFLINE", ["a", "b"], ["m"],
                                   force_cleanup=True)  # fmt: skip
    assert entry == "e-1"
    assert server.requests == [(
        "POST", "/segments/t/startReplaceSegments", {"type": "OFFLINE", "forceCleanup": "true"},
        {"segmentsFrom": ["a", "b"], "segmentsTo": ["m"]},
    )]  # fmt: skip


def test_start_is_not_retried_and_errors_carry_the_controllers_answer(controller):
    server = controller((503, {"code": 503, "error": "ZooKeeper is unavailable"}))
    with pytest.raises(LineageRequestError) as info:
        start_replace_segments(server.url, "t", "OFFLINE", ["a"], ["m"])
    assert isinstance(info.value, SubtaskFailedError)  # fails the subtask
    assert info.value.status == 503 and "ZooKeeper is unavailable" in str(info.value)
    assert len(server.requests) == 1


def test_end_is_retried_on_503(controller):
    server = controller((503, {"error": "busy"}), (503, {"error": "busy"}),
                        (200, {"segmentLineageEntryId": "e-1", "state": "COMPLETED"}))  # fmt: skip
    end_replace_segments(server.url, "t", "REALTIME", "e-1")
    assert [r[1] for r in server.requests] == ["/segments/t/endReplaceSegments"] * 3
    assert server.requests[0][2] == {"type": "REALTIME", "segmentLineageEntryId": "e-1"}


def test_end_gives_up_after_the_retries(controller):
    server = controller(*[(503, {"error": "busy"})] * (lineage_client.RETRIES + 1))
    with pytest.raises(LineageRequestError, match="HTTP 503: busy"):
        end_replace_segments(server.url, "t", "OFFLINE", "e-1")
    assert len(server.requests) == lineage_client.RETRIES + 1


def test_conflicts_are_not_retried(controller):
    server = controller((409, {"code": 409, "error": "lineage entry e-1 was reverted"}))
    with pytest.raises(LineageRequestError, match="was reverted") as info:
        end_replace_segments(server.url, "t", "OFFLINE", "e-1")
    assert info.value.status == 409 and len(server.requests) == 1


def test_revert_that_finds_its_entry_reverted_is_done(controller):
    server = controller(
        (409, {"error": "lineage entry e-1 of table t_OFFLINE is already REVERTED"})
    )
    revert_replace_segments(server.url, "t", "OFFLINE", "e-1", force_revert=True)
    assert server.requests[0][2] == {"type": "OFFLINE", "segmentLineageEntryId": "e-1",
                                     "forceRevert": "true"}  # fmt: skip


def test_unreachable_controller(controller):
    server = controller()
    url = server.url
    server.close()
    with pytest.raises(LineageRequestError, match="no answer"):
        revert_replace_segments(url, "t", "OFFLINE", "e-1")


def test_segment_lineage(controller):
    body = {"tableNameWithType": "t_OFFLINE", "lineageEntries": {}}
    server = controller((200, body), (404, {"error": "Table t_OFFLINE does not exist"}))
    assert segment_lineage(server.url, "t", "OFFLINE") == body
    assert server.requests[0][1:3] == ("/segments/t/lineage", {"type": "OFFLINE"})
    with pytest.raises(LineageRequestError, match="HTTP 404: Table t_OFFLINE does not exist"):
        segment_lineage(server.url, "t", "OFFLINE")
