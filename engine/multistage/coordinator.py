"""Running a compiled query's stages: submit each server its workers, run stage 0 here,
and gather the answer (the broker's side of the multi-stage engine).

Every server's submit is held open until its workers are done; the first error to arrive
(a worker's, or a server that cannot be reached or dies: its connection fails, and the
error names it) cancels the query on every server and wakes stage 0, so a failure is
reported at once and never waits for the deadline or yields a partial answer.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from engine.multistage.compiler import CompiledQuery
from engine.multistage.errors import SERVER_NOT_RESPONDING_ERROR_CODE, StageFailure, classify
from engine.multistage.fragment import BROKER, StageSpec
from engine.multistage.mailbox import MailboxClient, Mailboxes
from engine.multistage.worker import StageWorker
from engine.query.errors import QueryError, QueryTimeoutError

_POOL = ThreadPoolExecutor(64, thread_name_prefix="mse-submit")


class Outcome:
    def __init__(self) -> None:
        self.error: QueryError | None = None
        self.stats: list[dict] = []
        self.lock = threading.Lock()

    def fail(self, error: QueryError) -> bool:
        with self.lock:
            if self.error is None:
                self.error = error
                return True
            return False


class Coordinator:
    def __init__(self, mailboxes: Mailboxes, client: MailboxClient, transport) -> None:
        """``transport.submit(address, payload, deadline)`` -> the server's answer (dict),
        raising OSError when it cannot be reached; ``transport.cancel(address, id)``."""
        self.mailboxes = mailboxes
        self.client = client
        self.transport = transport

    def execute(self, compiled: CompiledQuery, stages: list[StageSpec], request_id: int,
                deadline: float, servers: dict[str, str]) -> tuple[pa.Table, Outcome]:  # fmt: skip
        outcome = Outcome()
        # a worker of a colocated join hears from its partition's leaf worker only
        senders = {s.id: 1 if s.distribution == "partitioned" else len(s.workers)
                   for s in stages}  # fmt: skip
        wire_senders = {str(k): v for k, v in senders.items()}
        by_server: dict[str, list[dict]] = {}
        for spec in stages:
            for server in {w.server for w in spec.workers if w.server != BROKER}:
                by_server.setdefault(server, []).append(spec.to_json())
        common = {"requestId": request_id, "options": compiled.options,
                  "limits": compiled.limits.to_json(), "senders": wire_senders}  # fmt: skip
        futures = []
        for server, specs in sorted(by_server.items()):
            payload = {
                **common,
                "stages": specs,
                "timeoutMs": max(int((deadline - time.monotonic()) * 1000), 1),
            }
            futures.append(_POOL.submit(self._submit, server, servers[server], payload,
                                        deadline, request_id, outcome, servers))  # fmt: skip
        root = stages[0]
        worker = StageWorker(request_id, root, root.workers[0], senders, self.mailboxes,
                             self.client, None, compiled.limits, deadline)  # fmt: skip
        table = None
        try:
            table = worker.run()
        except QueryError as exc:
            if outcome.fail(exc):
                self._cancel_all(request_id, servers, {})
        outcome.stats.append(worker.stats.to_json())
        for future in futures:
            future.result(timeout=max(deadline - time.monotonic(), 0) + 10.0)
        self.mailboxes.finish(request_id)
        return table, outcome

    def _submit(self, server: str, address: str, payload: dict, deadline: float,
                request_id: int, outcome: Outcome, servers: dict[str, str]) -> None:  # fmt: skip
        try:
            answer = self.transport.submit(address, payload, deadline)
        except TimeoutError:
            error = QueryTimeoutError(f"Timed out waiting for server {server}")
            if outcome.fail(error):
                self.mailboxes.cancel(request_id)
                self._cancel_all(request_id, servers, {server: []})
            return
        except OSError as exc:
            error = StageFailure(f"Server {server} failed or stopped during the query: "
                                 f"{type(exc).__name__}: {exc}",
                                 SERVER_NOT_RESPONDING_ERROR_CODE)  # fmt: skip
            if outcome.fail(error):
                self.mailboxes.cancel(request_id)
                self._cancel_all(request_id, servers, {server: []})
            return
        except Exception as exc:  # a bug here must fail the query now, not at its deadline
            if outcome.fail(classify(exc)):
                self.mailboxes.cancel(request_id)
                self._cancel_all(request_id, servers, {})
            return
        with outcome.lock:
            outcome.stats += answer.get("stats", [])
        error = answer.get("error")
        if error and outcome.fail(StageFailure(error["message"], int(error["errorCode"]))):
            self.mailboxes.cancel(request_id)
            self._cancel_all(request_id, servers, {server: []})

    def _cancel_all(self, request_id: int, servers: dict[str, str], skip: dict) -> None:
        for server, address in servers.items():
            if server in skip:
                continue
            with contextlib.suppress(OSError):  # a dead server needs no cancel
                self.transport.cancel(address, request_id)
