"""The multi-stage engine in one process for tests: two server runners and the broker's
coordinator, with mailboxes that deliver in memory and submits that call the runners
directly (only the network is replaced)."""

from __future__ import annotations

import itertools
import time

import orjson

from engine.multistage.compiler import compile_request
from engine.multistage.coordinator import Coordinator
from engine.multistage.fragment import Fragmenter
from engine.multistage.mailbox import MailboxClient, Mailboxes
from engine.multistage.runner import StageRunner

SERVERS = {"s1": "s1:1", "s2": "s2:1"}
_IDS = itertools.count(1)


class Peers(MailboxClient):
    def __init__(self, local: Mailboxes, address: str, boxes: dict) -> None:
        super().__init__(local, address)
        self.boxes = boxes

    def send(self, address, request_id, stage, worker, sender, table, deadline) -> None:
        self.boxes[address].deliver(request_id, stage, worker, sender, table, True)

    def send_error(self, address, request_id, stage, worker, sender, message, code, deadline):
        self.boxes[address].deliver(request_id, stage, worker, sender, None, True, (message, code))


class Transport:
    def __init__(self, runners) -> None:
        self.runners = runners

    def submit(self, address, payload, deadline):
        return self.runners[address].submit(orjson.dumps(payload))

    def cancel(self, address, request_id):
        self.runners[address].cancel(request_id)


def coordinator(leaf_reader) -> Coordinator:
    """``leaf_reader(server)`` -> that server's ``read(leaf, segments, deadline, options,
    keys)``."""
    boxes: dict[str, Mailboxes] = {}
    runners = {}
    for server, address in SERVERS.items():
        runner = StageRunner(server, address, leaf_reader(server))
        runner.client = Peers(runner.mailboxes, address, boxes)
        boxes[address] = runner.mailboxes
        runners[address] = runner
    broker_boxes = Mailboxes()
    boxes["broker:1"] = broker_boxes
    client = Peers(broker_boxes, "broker:1", boxes)
    return Coordinator(broker_boxes, client, Transport(runners))


def route(table, everything_on=None):
    return {s: {f"{table}_OFFLINE": ["seg"]} for s in SERVERS}


def stages_of(sql: str, catalog, options: dict | None = None):
    compiled = compile_request(sql, options or {}, catalog)
    stages = Fragmenter(compiled.typing, route, SERVERS, "broker:1").fragment(compiled.physical)
    return compiled, stages


def run(engine: Coordinator, sql: str, catalog, options: dict | None = None) -> list[list]:
    compiled, stages = stages_of(sql, catalog, options)
    table, outcome = engine.execute(compiled, stages, next(_IDS), time.monotonic() + 30, SERVERS)
    if outcome.error is not None:
        raise outcome.error
    return [list(r.values()) for r in table.to_pylist()]


def next_request_id() -> int:
    return next(_IDS)
