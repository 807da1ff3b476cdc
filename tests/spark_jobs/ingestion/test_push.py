"""Unit tests of the push client's retry rules, with a stand-in HTTP session (the real
controller is exercised in test_end_to_end.py)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import requests

from spark_jobs.ingestion.errors import PushError
from spark_jobs.ingestion.push import (
    PushTarget,
    metadata_tar_bytes,
    push_segment,
    segment_download_uri,
)


class ScriptedSession:
    """Answers each POST with the next scripted status (or raises the scripted exception)."""

    def __init__(self, *script: int | Exception) -> None:
        self.script = list(script)
        self.calls: list[dict] = []

    def post(self, url: str, **kwargs) -> requests.Response:
        files = kwargs.get("files") or {}
        self.calls.append({**kwargs, "url": url, "file_fields": list(files)})
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        response = requests.Response()
        response.status_code = step
        response._content = b'{"status": "ok"}' if step < 300 else b'{"code": 1, "error": "nope"}'
        return response


@pytest.fixture
def tar(tmp_path: Path) -> Path:
    segment = tmp_path / "seg_1"
    segment.mkdir()
    (segment / "metadata.json").write_text("{}")
    (segment / "creation.meta").write_text("c")
    (segment / "columns.bin").write_bytes(b"x" * 100)
    path = tmp_path / "seg_1.tar.gz"
    with tarfile.open(path, "w:gz") as out:
        out.add(segment, arcname="seg_1")
    return path


def target(mode: str = "TAR", attempts: int = 3) -> PushTarget:
    return PushTarget("http://c:9000", "t", "OFFLINE", mode, attempts, retry_interval_millis=10)


def test_tar_push_sends_the_file_with_pinot_parameters(tar: Path) -> None:
    http = ScriptedSession(200)
    outcome = push_segment(target(), tar, http=http, sleep=lambda s: None)
    assert outcome.ok and outcome.segment_name == "seg_1" and outcome.attempts == 1
    call = http.calls[0]
    assert call["url"] == "http://c:9000/segments"
    assert call["params"] == {"tableName": "t", "tableType": "OFFLINE", "uploadType": "SEGMENT"}
    assert call["file_fields"] == ["seg_1"]


def test_server_errors_are_retried_with_backoff(tar: Path) -> None:
    waits: list[float] = []
    http = ScriptedSession(503, requests.ConnectionError("refused"), 200)
    outcome = push_segment(target(), tar, http=http, sleep=waits.append)
    assert outcome.ok and outcome.attempts == 3
    assert waits == [0.01, 0.05]


def test_rejection_is_not_retried_and_keeps_the_controller_message(tar: Path) -> None:
    http = ScriptedSession(409, 200)
    outcome = push_segment(target(), tar, http=http, sleep=lambda s: None)
    assert not outcome.ok and outcome.attempts == 1
    assert outcome.message == "rejected by the controller (HTTP 409: nope)"


def test_gives_up_after_the_attempts(tar: Path) -> None:
    http = ScriptedSession(500, 500)
    outcome = push_segment(target(attempts=2), tar, http=http, sleep=lambda s: None)
    assert not outcome.ok
    assert outcome.message == "failed after 2 attempt(s): HTTP 500: nope"


def test_uri_push_sends_only_the_download_uri(tar: Path) -> None:
    http = ScriptedSession(200)
    uri = segment_download_uri(tar, "s3://bucket", "?v=1")
    push_segment(target("URI"), tar, download_uri=uri, http=http, sleep=lambda s: None)
    call = http.calls[0]
    assert call["file_fields"] == []
    assert call["headers"]["DOWNLOAD_URI"] == f"s3://bucket{tar.resolve().as_posix()}?v=1"
    assert call["params"]["uploadType"] == "URI"


def test_default_download_uri_is_the_file_uri(tar: Path) -> None:
    assert segment_download_uri(tar, None, None) == tar.resolve().as_uri()


def test_metadata_push_sends_only_the_metadata_files(tar: Path) -> None:
    http = ScriptedSession(200)
    push_segment(
        target("METADATA"), tar, metadata_files=("metadata.json", "creation.meta"),
        http=http, sleep=lambda s: None,
    )  # fmt: skip
    call = http.calls[0]
    assert call["params"]["uploadType"] == "METADATA" and "DOWNLOAD_URI" in call["headers"]
    assert call["file_fields"] == ["seg_1"]
    small = metadata_tar_bytes(tar, ("metadata.json", "creation.meta"))
    with tarfile.open(fileobj=io.BytesIO(small), mode="r:gz") as archive:
        assert sorted(archive.getnames()) == ["seg_1/creation.meta", "seg_1/metadata.json"]


def test_metadata_push_of_a_tar_without_metadata(tar: Path, tmp_path: Path) -> None:
    with pytest.raises(PushError, match=r"has no other\.meta"):
        metadata_tar_bytes(tar, ("metadata.json", "other.meta"))
    outcome = push_segment(
        target("METADATA"), tar, metadata_files=("nope.json",),
        http=ScriptedSession(), sleep=lambda s: None,
    )  # fmt: skip
    assert not outcome.ok and "has no nope.json" in outcome.message
