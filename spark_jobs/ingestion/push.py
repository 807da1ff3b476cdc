"""Pushing segment tars to the controller, with Pinot's three upload types on `POST /segments`:

- TAR: the whole `.tar.gz` as a multipart file (`uploadType=SEGMENT`);
- URI: only a `DOWNLOAD_URI` header naming where the controller fetches the tar
  (`uploadType=URI`);
- METADATA: a small tar of the segment's metadata files plus the `DOWNLOAD_URI` header
  (`uploadType=METADATA`).

An HTTP 5xx or a connection failure is retried up to `pushAttempts` times, waiting
`pushRetryIntervalMillis` and then 5 times longer after each failure (Pinot's backoff); a 4xx
is the controller rejecting the segment, and is not retried.
"""

from __future__ import annotations

import functools
import io
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from spark_jobs.ingestion.errors import PushError
from spark_jobs.ingestion.table_source import controller_message

UPLOAD_TIMEOUT_SECONDS = 600
BACKOFF_FACTOR = 5


@dataclass(frozen=True)
class PushTarget:
    """Where and how to push: one controller, one table, one upload type."""

    controller_uri: str
    table_name: str
    table_type: str = "OFFLINE"
    mode: str = "TAR"  # TAR | URI | METADATA
    attempts: int = 1
    retry_interval_millis: int = 1000
    auth_token: str | None = None


@dataclass(frozen=True)
class PushOutcome:
    """The result of pushing one segment to one controller."""

    segment_name: str
    tar_path: str
    controller_uri: str
    ok: bool
    message: str
    attempts: int


def segment_name_of(tar_path: Path) -> str:
    return tar_path.name[: -len(".tar.gz")]


def segment_download_uri(tar_path: Path, prefix: str | None, suffix: str | None) -> str:
    """The URI the controller downloads the segment from: Pinot's
    `${segmentUriPrefix}${path}${segmentUriSuffix}`, or the tar's file:// URI without either."""
    if not prefix and not suffix:
        return tar_path.resolve().as_uri()
    return f"{prefix or ''}{tar_path.resolve().as_posix()}{suffix or ''}"


def metadata_tar_bytes(tar_path: Path, metadata_files: tuple[str, ...]) -> bytes:
    """A tar.gz holding only the segment's metadata files (found at any depth in `tar_path`)."""
    out = io.BytesIO()
    try:
        with (
            tarfile.open(tar_path, "r:gz") as source,
            tarfile.open(fileobj=out, mode="w:gz") as sink,
        ):
            found = set()
            for member in source:
                if member.isfile() and Path(member.name).name in metadata_files:
                    data = source.extractfile(member)
                    sink.addfile(member, data)
                    found.add(Path(member.name).name)
    except (OSError, tarfile.TarError) as exc:
        raise PushError(f"cannot read segment tar {str(tar_path)!r}: {exc}") from exc
    missing = [name for name in metadata_files if name not in found]
    if missing:
        raise PushError(f"segment tar {str(tar_path)!r} has no {', '.join(missing)}")
    return out.getvalue()


class _ServerFailure(Exception):
    """An attempt the controller did not answer, or answered with a 5xx: worth another."""


def push_segment(
    target: PushTarget,
    tar_path: Path,
    download_uri: str | None = None,
    metadata_files: tuple[str, ...] = (),
    http: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> PushOutcome:
    """Push one segment tar to `target`; never raises for a failed push, the outcome says it."""
    segment_name = segment_name_of(tar_path)
    http = http or requests.Session()
    retrying = Retrying(
        stop=stop_after_attempt(target.attempts),
        wait=wait_exponential(
            multiplier=target.retry_interval_millis / 1000, exp_base=BACKOFF_FACTOR
        ),
        retry=retry_if_exception_type(_ServerFailure),
        sleep=sleep,
        reraise=True,
    )
    send = functools.partial(
        _send, target, tar_path, segment_name, download_uri, metadata_files, http
    )
    try:
        for attempt in retrying:
            with attempt:
                ok, message = _attempt(send)
                return PushOutcome(
                    segment_name, str(tar_path), target.controller_uri, ok, message,
                    attempt.retry_state.attempt_number,
                )  # fmt: skip
    except _ServerFailure as exc:
        message = f"failed after {target.attempts} attempt(s): {exc}"
        return PushOutcome(
            segment_name, str(tar_path), target.controller_uri, False, message, target.attempts
        )
    raise AssertionError("unreachable: every attempt returns or raises")


class _ServerFailure(Exception):
    """The controller did not answer, or answered with a 5xx: worth another attempt."""


def _attempt(send: Callable[[], requests.Response]) -> tuple[bool, str]:
    """(pushed, message) of one ``send``; raises _ServerFailure when another may succeed."""
    try:
        response = send()
    except PushError as exc:
        return False, str(exc)
    except (requests.RequestException, OSError) as exc:
        message = f"cannot reach the controller: {exc.__class__.__name__}: {exc}"
        raise _ServerFailure(message) from exc
    if response.status_code < 300:
        return True, controller_message(response)
    message = f"HTTP {response.status_code}: {controller_message(response)}"
    if response.status_code < 500:
        return False, f"rejected by the controller ({message})"
    raise _ServerFailure(message)


def _send(
    target: PushTarget,
    tar_path: Path,
    segment_name: str,
    download_uri: str | None,
    metadata_files: tuple[str, ...],
    http: requests.Session,
) -> requests.Response:
    upload_type = {"TAR": "SEGMENT", "URI": "URI", "METADATA": "METADATA"}[target.mode]
    params = {
        "tableName": target.table_name,
        "tableType": target.table_type,
        "uploadType": upload_type,
    }
    headers = {"UPLOAD_TYPE": upload_type}
    if target.auth_token:
        headers["Authorization"] = target.auth_token
    if target.mode != "TAR":
        headers["DOWNLOAD_URI"] = download_uri or segment_download_uri(tar_path, None, None)
    url = f"{target.controller_uri}/segments"
    if target.mode == "URI":
        return http.post(url, params=params, headers=headers, timeout=UPLOAD_TIMEOUT_SECONDS)
    if target.mode == "METADATA":
        payload = metadata_tar_bytes(tar_path, metadata_files)
        files = {segment_name: (tar_path.name, payload, "application/octet-stream")}
        return http.post(
            url, params=params, headers=headers, files=files, timeout=UPLOAD_TIMEOUT_SECONDS
        )
    with tar_path.open("rb") as tar:
        files = {segment_name: (tar_path.name, tar, "application/octet-stream")}
        return http.post(
            url, params=params, headers=headers, files=files, timeout=UPLOAD_TIMEOUT_SECONDS
        )
