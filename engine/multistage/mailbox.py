"""Mailboxes: where a stage worker's rows wait for the worker that reads them.

A mailbox is (request id, receiving stage, receiving worker); each sending worker posts its
rows as Arrow IPC streams and then an end of stream, or an error, which fails the receiver at
once (Pinot's error block). A receiver waits until every sender has ended, the query's
deadline passes (250), or the query is cancelled; a message may arrive before the receiving
worker exists, so boxes are made on first touch and dropped when the query ends (or, for a
query that never ran here, after ``ORPHAN_TTL_S``).

Between processes a message is ``POST /multistage/mailbox`` (``MailboxClient``) on the
receiver's query port; within one process it is handed over in memory.
"""

from __future__ import annotations

import threading
import time
import urllib.parse

import orjson
import pyarrow as pa
import urllib3

from engine.multistage.errors import QueryCancelledError, StageFailure
from engine.multistage.exchange import chunks, from_ipc, to_ipc
from engine.query.errors import QueryTimeoutError

ORPHAN_TTL_S = 600.0
MAX_MESSAGE_BYTES = 16 << 20  # Pinot's pinot.query.runner.max.msg.size.bytes


class _Box:
    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self.ended: set[int] = set()
        self.error: tuple[str, int] | None = None
        self.created = time.monotonic()
        self.bytes = 0


class Mailboxes:
    """Every mailbox of this process."""

    def __init__(self) -> None:
        self._boxes: dict[tuple[int, int, int], _Box] = {}
        self._cancelled: dict[int, float] = {}
        self._cond = threading.Condition()

    def deliver(self, request_id: int, stage: int, worker: int, sender: int, table,
                end: bool, error: tuple[str, int] | None = None) -> None:  # fmt: skip
        with self._cond:
            if request_id in self._cancelled:
                return
            box = self._boxes.setdefault((request_id, stage, worker), _Box())
            if table is not None and table.num_rows:
                box.tables.append(table)
                box.bytes += table.nbytes
            if error is not None and box.error is None:
                box.error = error
            if end:
                box.ended.add(sender)
            self._cond.notify_all()

    def receive(self, request_id: int, stage: int, worker: int, senders: int,
                deadline: float) -> list[pa.Table]:  # fmt: skip
        """The tables of every sender, once all ``senders`` ended."""
        key = (request_id, stage, worker)
        with self._cond:
            while True:
                if request_id in self._cancelled:
                    raise QueryCancelledError(f"Query {request_id} was cancelled")
                box = self._boxes.setdefault(key, _Box())
                if box.error is not None:
                    raise StageFailure(*box.error)
                if len(box.ended) >= senders:
                    del self._boxes[key]
                    return box.tables
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise QueryTimeoutError(
                        f"Timed out waiting for stage {stage}'s input "
                        f"({len(box.ended)} of {senders} senders done)"
                    )
                self._cond.wait(min(remaining, 1.0))

    def cancel(self, request_id: int) -> None:
        with self._cond:
            self._cancelled[request_id] = time.monotonic()
            for key in [k for k in self._boxes if k[0] == request_id]:
                del self._boxes[key]
            self._cond.notify_all()
            self._sweep()

    def cancelled(self, request_id: int) -> bool:
        return request_id in self._cancelled

    def finish(self, request_id: int) -> None:
        """Drop what is left of a finished query."""
        with self._cond:
            for key in [k for k in self._boxes if k[0] == request_id]:
                del self._boxes[key]
            self._sweep()

    def _sweep(self) -> None:
        now = time.monotonic()
        for key, box in list(self._boxes.items()):
            if now - box.created > ORPHAN_TTL_S:
                del self._boxes[key]
        for request_id, when in list(self._cancelled.items()):
            if now - when > ORPHAN_TTL_S:
                del self._cancelled[request_id]


class MailboxClient:
    """Sends to mailboxes: in memory when the receiver is this process (``local``), else
    over HTTP to the receiver's ``/multistage/mailbox``."""

    def __init__(self, local: Mailboxes, local_address: str) -> None:
        self.local = local
        self.local_address = local_address
        self.http = urllib3.PoolManager(num_pools=32, maxsize=8)

    def send(self, address: str, request_id: int, stage: int, worker: int, sender: int,
             table: pa.Table, deadline: float) -> None:  # fmt: skip
        if address == self.local_address:
            self.local.deliver(request_id, stage, worker, sender, table, True)
            return
        pieces = chunks(table, MAX_MESSAGE_BYTES)
        for i, piece in enumerate(pieces):
            self._post(address, request_id, stage, worker, sender, to_ipc(piece),
                       end=i == len(pieces) - 1, deadline=deadline)  # fmt: skip

    def send_error(self, address: str, request_id: int, stage: int, worker: int, sender: int,
                   message: str, code: int, deadline: float) -> None:  # fmt: skip
        if address == self.local_address:
            self.local.deliver(request_id, stage, worker, sender, None, True, (message, code))
            return
        body = orjson.dumps({"message": message, "errorCode": code})
        self._post(address, request_id, stage, worker, sender, body, end=True,
                   deadline=deadline, error=True)  # fmt: skip

    def _post(self, address, request_id, stage, worker, sender, body, *, end, deadline,
              error=False) -> None:  # fmt: skip
        query = urllib.parse.urlencode({
            "requestId": request_id, "stage": stage, "worker": worker, "sender": sender,
            "end": int(end), "error": int(error),
        })  # fmt: skip
        timeout = max(deadline - time.monotonic(), 0.05)
        response = self.http.request(
            "POST", f"http://{address}/multistage/mailbox?{query}", body=body,
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
            timeout=urllib3.Timeout(connect=min(timeout, 2.0), read=timeout), retries=False,
        )  # fmt: skip
        if response.status != 200:
            raise StageFailure(
                f"mailbox {address} refused stage {stage}'s rows: {response.status} "
                f"{response.data[:200]!r}", 200,
            )  # fmt: skip


def accept(mailboxes: Mailboxes, query: dict[str, str], body: bytes) -> None:
    """The receiving end of ``POST /multistage/mailbox``; raises ValueError on a bad one."""
    try:
        request_id, stage = int(query["requestId"]), int(query["stage"])
        worker, sender = int(query["worker"]), int(query["sender"])
        end, error = query.get("end") == "1", query.get("error") == "1"
    except (KeyError, ValueError) as exc:
        raise ValueError(f"bad mailbox address: {exc}") from exc
    if error:
        data = orjson.loads(body)
        mailboxes.deliver(request_id, stage, worker, sender, None, True,
                          (str(data.get("message")), int(data.get("errorCode", 200))))  # fmt: skip
        return
    table = from_ipc(body) if body else None
    mailboxes.deliver(request_id, stage, worker, sender, table, end)
