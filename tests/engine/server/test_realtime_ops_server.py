"""The server's side of force commit and its ingestion metrics (unit tests: the consumers are
stand-ins that record what they were told; nothing connects to ZooKeeper or Kafka)."""

from __future__ import annotations

from engine.clusterstate import InstanceConfig, Message
from engine.clusterstate.records import FORCE_COMMIT_MESSAGE, FORCE_COMMIT_SEGMENTS
from engine.runtime.participant import Participant
from engine.server.follower import IdealStateFollower
from engine.server.metrics import ServerMetrics
from engine.server.realtime import ConsumingSegment, RealtimeSegmentManager

TABLE = "ev_REALTIME"


class RecordingConsumer:
    partition = 0

    def __init__(self):
        self.forced = False

    def force_commit(self):
        self.forced = True


class Segments:
    """What the follower needs of SegmentDataManager for this message."""

    def __init__(self, realtime):
        self.realtime = realtime


def manager(tmp_path, names) -> tuple[RealtimeSegmentManager, dict]:
    realtime = RealtimeSegmentManager("Server_a_1", tmp_path, lambda: None, lambda _: None)
    consumers = {}
    for name in names:
        consumers[name] = RecordingConsumer()
        realtime._consuming[(TABLE, name)] = ConsumingSegment(
            TABLE, name, consumers[name], thread=None, metadata=None
        )
    return realtime, consumers


def test_force_commit_message_reaches_the_named_consumers(tmp_path):
    realtime, consumers = manager(tmp_path, ["ev__0__0__x", "ev__1__0__x", "ev__2__0__x"])
    participant = Participant("127.0.0.1:1", "c", InstanceConfig("Server_a_1", "h", 1))
    follower = IdealStateFollower(participant, Segments(realtime))
    follower.handle(Message("m1", FORCE_COMMIT_MESSAGE, TABLE, "",
                            {FORCE_COMMIT_SEGMENTS: "ev__0__0__x,ev__2__0__x,ev__9__0__x"}))  # fmt: skip
    assert {n: c.forced for n, c in consumers.items()} == {
        "ev__0__0__x": True, "ev__1__0__x": False, "ev__2__0__x": True
    }  # fmt: skip
    # a segment not consuming yet is remembered until it starts (or is forgotten)
    assert (TABLE, "ev__9__0__x") in realtime._force_pending
    realtime.forget(TABLE, "ev__9__0__x")
    assert not realtime._force_pending


def test_ingestion_rate_between_scrapes():
    metrics = ServerMetrics()
    totals = {(TABLE, 0): {"consumed": 100, "malformed": 1, "filtered": 0, "stalls": 0,
                           "stalled": False, "delay_ms": 50}}  # fmt: skip
    metrics.observe_ingestion(totals, at_s=10.0)
    totals[(TABLE, 0)].update(consumed=400, stalls=1, stalled=True)
    metrics.observe_ingestion(totals, at_s=12.0)
    text = metrics.response().body.decode()
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    labels = '{partition="0",table="ev_REALTIME"}'
    assert float(lines[f"sprig_server_realtime_ingestion_rate_rows_per_second{labels}"]) == 150.0
    assert float(lines[f"sprig_server_realtime_rows_consumed_total{labels}"]) == 400.0
    assert float(lines[f"sprig_server_realtime_rows_dropped_total{labels}"]) == 1.0
    assert float(lines[f"sprig_server_realtime_ingestion_delay_ms{labels}"]) == 50.0
    assert float(lines[f"sprig_server_realtime_stalls_total{labels}"]) == 1.0
    assert float(lines[f"sprig_server_realtime_partition_stalled{labels}"]) == 1.0
