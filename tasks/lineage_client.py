"""The minion's side of the segment replacement protocol: calls to the controller's
``/segments/{t}/startReplaceSegments``, ``endReplaceSegments``, ``revertReplaceSegments`` and
``lineage`` (Pinot's paths and bodies), over HTTP like the rest of the executors.

A task that swaps segments does::

    entry = start_replace_segments(controller, raw, "OFFLINE", inputs, outputs)
    try:
        ...upload every output segment...
        end_replace_segments(controller, raw, "OFFLINE", entry)
    except Exception:
        revert_replace_segments(controller, raw, "OFFLINE", entry, force_revert=True)
        raise

Until ``end`` the brokers keep routing the inputs and hide the outputs, so queries never see
both. A retried subtask passes ``force_cleanup=True`` to start: the entry its failed attempt
left IN_PROGRESS is reverted and that attempt's uploads deleted.

Every refusal raises LineageRequestError (a SubtaskFailedError) with the controller's status
and message. ``end`` and ``revert`` are retried on a lost connection or a 503 (ZooKeeper
briefly away): ending a COMPLETED entry again is a no-op, and a retried revert that finds its
entry REVERTED is taken as done. ``start`` is not retried: a lost answer may have recorded an
entry, which the task's retry cleans up with ``force_cleanup``.
"""

from __future__ import annotations

import requests
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

from spark_jobs.ingestion.table_source import controller_message
from tasks.controller_auth import task_headers
from tasks.errors import SubtaskFailedError

RETRIES = 3
RETRY_PAUSE_S = 1.0
# endReplaceSegments may wait up to 30 s on the controller for segmentsTo to come ONLINE
END_TIMEOUT_S = 90.0
TIMEOUT_S = 60.0


class LineageRequestError(SubtaskFailedError):
    """The controller refused a lineage call (``status``) or could not be reached (None)."""

    def __init__(self, what: str, status: int | None, message: str):
        self.status = status
        self.message = message
        shown = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{what} failed: {shown}: {message}")


def start_replace_segments(
    controller: str,
    raw_table: str,
    table_type: str,
    segments_from: list[str],
    segments_to: list[str],
    *,
    force_cleanup: bool = False,
) -> str:
    """Record the replacement of ``segments_from`` by ``segments_to``; the lineage entry id."""
    response = _post(
        f"start replacing {segments_from} by {segments_to} in {raw_table}_{table_type}",
        f"{controller}/segments/{raw_table}/startReplaceSegments",
        {"type": table_type, "forceCleanup": _flag(force_cleanup)},
        body={"segmentsFrom": list(segments_from), "segmentsTo": list(segments_to)},
        retries=0,
    )
    return str(response.json()["segmentLineageEntryId"])


def end_replace_segments(controller: str, raw_table: str, table_type: str, entry_id: str) -> None:
    """Switch queries to the entry's segmentsTo (all uploaded by now)."""
    _post(
        f"end replacement {entry_id} of {raw_table}_{table_type}",
        f"{controller}/segments/{raw_table}/endReplaceSegments",
        {"type": table_type, "segmentLineageEntryId": entry_id},
        timeout_s=END_TIMEOUT_S,
    )


def revert_replace_segments(
    controller: str, raw_table: str, table_type: str, entry_id: str, *, force_revert: bool = False
) -> None:
    """Switch queries back to the entry's segmentsFrom; ``force_revert`` for an IN_PROGRESS
    entry (the usual case: the task failed before ``end``)."""
    what = f"revert replacement {entry_id} of {raw_table}_{table_type}"
    try:
        _post(
            what,
            f"{controller}/segments/{raw_table}/revertReplaceSegments",
            {"type": table_type, "segmentLineageEntryId": entry_id,
             "forceRevert": _flag(force_revert)},
        )  # fmt: skip
    except LineageRequestError as exc:
        if exc.status == 409 and "already REVERTED" in exc.message:
            return  # an earlier attempt of this call got through
        raise


def segment_lineage(controller: str, raw_table: str, table_type: str) -> dict:
    """``{"tableNameWithType", "lineageEntries": {id: {segmentsFrom, segmentsTo, state,
    timestamp}}}``, entries oldest first."""
    what = f"read the segment lineage of {raw_table}_{table_type}"
    try:
        response = requests.get(f"{controller}/segments/{raw_table}/lineage",
                                params={"type": table_type}, headers=task_headers(),
                                timeout=TIMEOUT_S)  # fmt: skip
    except requests.RequestException as exc:
        raise LineageRequestError(what, None, str(exc)) from exc
    if response.status_code != 200:
        raise LineageRequestError(what, response.status_code, controller_message(response))
    return response.json()


def _post(
    what: str,
    url: str,
    params: dict,
    *,
    body: dict | None = None,
    retries: int = RETRIES,
    timeout_s: float = TIMEOUT_S,
) -> requests.Response:
    """The controller's 200 answer; up to ``retries`` more tries on a lost connection or a
    503, ``RETRY_PAUSE_S`` apart. Raises LineageRequestError with the last refusal."""

    def once() -> requests.Response:
        try:
            response = requests.post(url, params=params, json=body, headers=task_headers(),
                                     timeout=timeout_s)  # fmt: skip
        except requests.RequestException as exc:
            raise LineageRequestError(what, None, str(exc)) from exc
        if response.status_code != 200:
            raise LineageRequestError(what, response.status_code, controller_message(response))
        return response

    retrying = Retrying(
        stop=stop_after_attempt(retries + 1),
        wait=wait_fixed(RETRY_PAUSE_S),
        retry=retry_if_exception(_transient),
        reraise=True,
    )
    return retrying(once)


def _transient(exc: BaseException) -> bool:
    """No answer, or ZooKeeper briefly away behind the controller."""
    return isinstance(exc, LineageRequestError) and exc.status in (None, 503)


def _flag(value: bool) -> str:
    return "true" if value else "false"
