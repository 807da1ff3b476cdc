"""The controller's segment completion FSM and its manager (unit tests with a fake clock)."""

from __future__ import annotations

import pytest

from cluster.logic.realtime.completion_fsm import FsmState, SegmentCompletionFSM
from cluster.logic.realtime.completion_manager import SegmentCompletionManager
from engine.realtime import completion as proto

SEG = "events__0__3__20260801T1200Z"


class Clock:
    def __init__(self):
        self.ms = 1_000_000.0

    def __call__(self):
        return self.ms


class Commits:
    def __init__(self, ok: bool = True):
        self.ok = ok
        self.calls = []

    def __call__(self, instance, offset, location):
        self.calls.append((instance, offset, location))
        return self.ok


def fsm(replicas=2, commit=None, **kw):
    clock = Clock()
    machine = SegmentCompletionFSM(SEG, replicas, commit or Commits(), clock=clock, **kw)
    return machine, clock


def statuses(*responses):
    return [(r.status, r.offset) for r in responses]


def commit_through(machine, instance, offset, location="/deep/events/seg.tmp.1"):
    assert machine.segment_commit_start(instance, offset).status == proto.COMMIT_CONTINUE
    assert machine.segment_upload(instance, offset, lambda: location).status == (
        proto.UPLOAD_SUCCESS
    )
    return machine.segment_commit_end(instance, offset, location)


def test_single_replica_at_row_limit_commits_at_once():
    commits = Commits()
    machine, _ = fsm(replicas=1, commit=commits)
    reply = machine.segment_consumed("S1", 500, proto.REASON_ROW_LIMIT)
    assert reply.status == proto.COMMIT and reply.offset == 500 and reply.build_time_sec == 126
    assert commit_through(machine, "S1", 500).status == proto.COMMIT_SUCCESS
    assert commits.calls == [("S1", 500, "/deep/events/seg.tmp.1")]
    assert machine.state is FsmState.COMMITTED and machine.is_done
    assert statuses(machine.segment_consumed("S1", 500), machine.segment_consumed("S2", 490)) == [
        (proto.KEEP, 500),
        (proto.DISCARD, 500),
    ]


def test_two_replicas_at_different_offsets_largest_wins_other_catches_up_and_keeps():
    machine, _ = fsm(replicas=2)
    # time limit: wait for both replicas
    assert machine.segment_consumed("S1", 100, proto.REASON_TIME_LIMIT).status == proto.HOLD
    assert statuses(machine.segment_consumed("S2", 120, proto.REASON_TIME_LIMIT)) == [
        (proto.COMMIT, 120)
    ]
    assert statuses(machine.segment_consumed("S1", 100)) == [(proto.CATCH_UP, 120)]
    assert statuses(machine.segment_consumed("S1", 120)) == [(proto.HOLD, None)]
    assert commit_through(machine, "S2", 120).status == proto.COMMIT_SUCCESS
    assert statuses(machine.segment_consumed("S1", 120)) == [(proto.KEEP, 120)]


def test_the_first_row_limit_reporter_wins_and_ties_go_to_the_caller():
    machine, _ = fsm(replicas=2)
    assert machine.segment_consumed("S2", 300, proto.REASON_ROW_LIMIT).status == proto.COMMIT
    assert machine.segment_consumed("S1", 300).status == proto.HOLD  # same offset: wait
    tie, _ = fsm(replicas=2)
    assert tie.segment_consumed("S1", 50, proto.REASON_TIME_LIMIT).status == proto.HOLD
    assert tie.segment_consumed("S2", 50, proto.REASON_TIME_LIMIT).status == proto.COMMIT
    assert tie.winner == "S2"


def test_winner_is_picked_after_3_3_seconds_without_the_other_replica():
    machine, clock = fsm(replicas=2)
    assert machine.segment_consumed("S1", 70, proto.REASON_TIME_LIMIT).status == proto.HOLD
    clock.ms += 3000
    assert machine.segment_consumed("S1", 70, proto.REASON_TIME_LIMIT).status == proto.HOLD
    clock.ms += 400
    assert statuses(machine.segment_consumed("S1", 70)) == [(proto.COMMIT, 70)]


def test_a_replica_that_stopped_consuming_is_not_waited_for():
    machine, _ = fsm(replicas=2)
    assert machine.segment_stopped_consuming("S2", 40, "PermanentStreamError").status == (
        proto.PROCESSED
    )
    assert machine.state is FsmState.PARTIAL_CONSUMING
    assert machine.segment_consumed("S1", 60, proto.REASON_TIME_LIMIT).status == proto.COMMIT


def test_winner_that_never_comes_back_aborts():
    machine, clock = fsm(replicas=2)
    assert machine.segment_consumed("S2", 20, proto.REASON_TIME_LIMIT).status == proto.HOLD
    # S1 completes the set: S2 has the larger offset and wins, but is not told yet
    assert statuses(machine.segment_consumed("S1", 10, proto.REASON_TIME_LIMIT)) == [
        (proto.CATCH_UP, 20)
    ]
    assert machine.state is FsmState.COMMITTER_DECIDED and machine.winner == "S2"
    clock.ms += 7000  # S2 never asks again within 6.6 s
    assert machine.segment_consumed("S1", 20).status == proto.HOLD
    assert machine.state is FsmState.ABORTED and machine.is_done


def test_winner_told_in_time_still_commits_after_deciding():
    machine, clock = fsm(replicas=2)
    machine.segment_consumed("S2", 20, proto.REASON_TIME_LIMIT)
    machine.segment_consumed("S1", 10, proto.REASON_TIME_LIMIT)
    clock.ms += 3000
    assert statuses(machine.segment_consumed("S2", 20)) == [(proto.COMMIT, 20)]
    assert machine.segment_consumed("S1", 25).status == proto.HOLD  # ahead: may lead later


@pytest.mark.parametrize("step", ["wrong_offset", "not_winner", "zk_fails", "too_late"])
def test_commit_mismatches_fail(step):
    commits = Commits(ok=step != "zk_fails")
    machine, clock = fsm(replicas=1, commit=commits)
    machine.segment_consumed("S1", 5, proto.REASON_ROW_LIMIT)
    if step == "wrong_offset":
        assert machine.segment_commit_start("S1", 6).status == proto.FAILED
        assert machine.state is FsmState.ABORTED
    elif step == "not_winner":
        assert machine.segment_commit_start("S9", 5).status == proto.FAILED
        assert machine.state is FsmState.COMMITTER_NOTIFIED  # the winner may still commit
    elif step == "zk_fails":
        assert commit_through(machine, "S1", 5).status == proto.FAILED
        assert machine.state is FsmState.ABORTED
    else:
        clock.ms += 6600 + 120_000 + 1
        assert machine.segment_commit_start("S1", 5).status == proto.HOLD
        assert machine.state is FsmState.ABORTED


def test_extend_build_time_moves_the_deadline_up_to_30_minutes():
    machine, clock = fsm(replicas=1)
    machine.segment_consumed("S1", 5, proto.REASON_ROW_LIMIT)
    assert machine.extend_build_time("S2", 5, 60).status == proto.FAILED
    clock.ms += 100_000
    assert machine.extend_build_time("S1", 5, 600).status == proto.PROCESSED
    clock.ms += 400_000  # past the original deadline, within the extension
    assert machine.segment_commit_start("S1", 5).status == proto.COMMIT_CONTINUE
    late, clock = fsm(replicas=1)
    late.segment_consumed("S1", 5, proto.REASON_ROW_LIMIT)
    late.extend_build_time("S1", 5, 10_000)
    assert late.deadline_ms == late.start_ms + 1_800_000


def test_manager_checks_leadership_and_rebuilds_finished_fsms_from_zk():
    committed: dict[str, int] = {}
    leader = {"events_REALTIME": True}

    def factory(segment):
        return SegmentCompletionFSM(
            segment,
            1,
            lambda i, o, loc: committed.setdefault(segment, o) is not None,
            committed_offset=committed.get(segment),
        )

    manager = SegmentCompletionManager(factory, lambda table: leader.get(table, False))
    assert manager.segment_consumed("other__0__0__20260801T1200Z", "S1", 1).status == (
        proto.NOT_LEADER
    )
    assert manager.segment_consumed("not-an-llc-name", "S1", 1).status == proto.FAILED
    assert manager.segment_consumed(SEG, "S1", 9, proto.REASON_ROW_LIMIT).status == proto.COMMIT
    assert manager.active() == [SEG]
    assert manager.segment_commit_start(SEG, "S1", 9).status == proto.COMMIT_CONTINUE
    assert manager.segment_upload(SEG, "S1", 9, lambda: "/loc").status == proto.UPLOAD_SUCCESS
    assert manager.segment_commit_end(SEG, "S1", 9, "/loc").status == proto.COMMIT_SUCCESS
    assert manager.active() == []  # done FSMs are dropped
    # a later call (or a restarted controller) starts from ZK: already committed at 9
    assert manager.segment_consumed(SEG, "S2", 9).status == proto.KEEP
    assert manager.segment_consumed(SEG, "S2", 8).status == proto.DISCARD
    leader["events_REALTIME"] = False
    assert manager.segment_consumed(SEG, "S1", 9).status == proto.NOT_LEADER


def test_only_the_winners_upload_is_stored_and_only_its_location_committed():
    commits = Commits()
    machine, _ = fsm(replicas=1, commit=commits)
    stored = []

    def store(location):
        return lambda: stored.append(location) or location

    assert machine.segment_consumed("S1", 500, proto.REASON_ROW_LIMIT).status == proto.COMMIT
    # before commitStart, from another instance, at another offset: nothing is written
    assert machine.segment_upload("S1", 500, store("early")).status == proto.FAILED
    assert machine.segment_commit_start("S1", 500).status == proto.COMMIT_CONTINUE
    assert machine.segment_upload("S2", 500, store("intruder")).status == proto.FAILED
    assert machine.segment_upload("S1", 499, store("other offset")).status == proto.FAILED
    assert stored == []
    uploaded = machine.segment_upload("S1", 500, store("/deep/events/seg.tmp.7"))
    assert uploaded.status == proto.UPLOAD_SUCCESS
    assert uploaded.segment_location == "/deep/events/seg.tmp.7"
    # a location the upload did not hand out aborts the commit; nothing is moved
    elsewhere = "/deep/events/../../../etc/passwd"
    assert machine.segment_commit_end("S1", 500, elsewhere).status == proto.FAILED
    assert machine.state is FsmState.ABORTED and commits.calls == []
