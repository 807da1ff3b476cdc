"""The stage runner a server hosts: it runs the stage workers the broker placed on it.

``POST /multistage/submit`` carries the query's stages with this server's workers; each
worker runs in its own thread (a worker waits for its inputs, so a pool could deadlock), and
the answer, once all of them are done, is their statistics or the first error. The
broker holds that request open: if this server dies, the broker's read fails and it names
the server. ``POST /multistage/mailbox`` receives rows for this server's workers;
``POST /multistage/cancel?requestId=`` stops a query's workers here.
"""

from __future__ import annotations

import threading
import time

import orjson

from engine.multistage.fragment import StageSpec
from engine.multistage.mailbox import MailboxClient, Mailboxes, accept
from engine.multistage.options import Limits
from engine.multistage.worker import StageWorker
from engine.query.errors import QueryError, QueryExecutionError


class StageRunner:
    def __init__(self, instance_id: str, address: str, leaf_reader) -> None:
        """``leaf_reader(leaf spec, {table_TYPE: segments}, deadline, options)`` -> (Arrow
        table as the leaf's schema, scan counters)."""
        self.instance_id = instance_id
        self.mailboxes = Mailboxes()
        self.client = MailboxClient(self.mailboxes, address)
        self.leaf_reader = leaf_reader

    def submit(self, body: bytes) -> dict:
        started = time.monotonic()
        data = orjson.loads(body)
        request_id = int(data["requestId"])
        deadline = started + float(data["timeoutMs"]) / 1000.0
        options = data.get("options") or {}
        limits = Limits.from_json(data["limits"])
        senders = {int(k): int(v) for k, v in data["senders"].items()}
        stages = [StageSpec.from_json(s) for s in data["stages"]]
        workers = [
            StageWorker(
                request_id,
                spec,
                worker,
                senders,
                self.mailboxes,
                self.client,
                self._reader(options),
                limits,
                deadline,
            )
            for spec in stages
            for worker in spec.workers
            if worker.server == self.instance_id
        ]
        errors: list[QueryError] = []
        threads = [threading.Thread(target=_run, args=(w, errors), daemon=True,
                                    name=f"mse-{request_id}-{w.spec.id}-{w.worker.index}")
                   for w in workers]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0) + 5.0)
        if any(t.is_alive() for t in threads):
            self.mailboxes.cancel(request_id)
        else:
            self.mailboxes.finish(request_id)
        out = {"stats": [w.stats.to_json() for w in workers]}
        if errors:
            first = errors[0]
            out["error"] = {"errorCode": first.error_code,
                            "message": f"{self.instance_id}: {first.message}"}  # fmt: skip
        return out

    def _reader(self, options: dict):
        def read(leaf, segments, deadline):
            return self.leaf_reader(leaf, segments, deadline, options)

        return read

    def mailbox(self, query: dict[str, str], body: bytes) -> None:
        accept(self.mailboxes, query, body)

    def cancel(self, request_id: int) -> None:
        self.mailboxes.cancel(request_id)


def _run(worker: StageWorker, errors: list) -> None:
    try:
        worker.run()
    except QueryError as exc:
        errors.append(exc)
    except Exception as exc:  # a bug in a worker fails its query only
        errors.append(QueryExecutionError(f"{type(exc).__name__}: {exc}"))
