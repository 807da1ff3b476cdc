"""The segment replacement protocol over the controller's REST API (start, end, revert, the
lineage listing), its errors, the delete guard and the retention clean-up, with real segments
and FakeServers on the real ZooKeeper."""

from __future__ import annotations

import copy
import threading

import pytest
from django.db import connection

from cluster.logic import segment_lineage
from cluster.logic.lineage_retention import clean_up_lineage
from cluster.logic.segment_lineage import online_segments
from controller.errors import Conflict
from engine.clusterstate import ResourceAssignment
from engine.clusterstate.lineage import (
    LineageEntryState,
    lineage_consistent_segments,
    read_lineage,
)
from engine.common.clock import now_ms
from tests.cluster.conftest import register_servers, upload

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

TABLE = "airlineStats_OFFLINE"
BASE = "/segments/airlineStats"


@pytest.fixture
def table(api, store, airline_schema, airline_offline_config, airline_segments, fake_servers):
    """airlineStats_OFFLINE on one FakeServer with segments A and B uploaded and ONLINE;
    returns (A, B, [(name, tar) of the two other segments]) and a ``settle`` function."""
    (server_id,) = register_servers(api, 1)
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    config = copy.deepcopy(airline_offline_config)
    config["segmentsConfig"].update(retentionTimeUnit="DAYS", retentionTimeValue="365")
    assert api.post("/tables", config, format="json").status_code == 200
    server = fake_servers(server_id)

    def settle() -> None:
        server.sync()
        store.refresh_external_views()

    (a, tar_a), (b, tar_b), *others = airline_segments
    for tar in (tar_a, tar_b):
        assert upload(api, tar).status_code == 200
    settle()
    return a, b, others, settle


def start(api, body: dict, **params) -> object:
    query = "&".join(f"{k}={v}" for k, v in {"type": "OFFLINE", **params}.items())
    return api.post(f"{BASE}/startReplaceSegments?{query}", body, format="json")


def call(api, verb: str, entry_id: str, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    url = f"{BASE}/{verb}ReplaceSegments?type=OFFLINE&segmentLineageEntryId={entry_id}"
    return api.post(url + (f"&{query}" if query else ""))


def entries(api) -> dict:
    response = api.get(f"{BASE}/lineage?type=OFFLINE")
    assert response.status_code == 200, response.content
    assert response.json()["tableNameWithType"] == TABLE
    return response.json()["lineageEntries"]


def test_start_upload_end_then_revert(api, store, table):
    a, b, others, settle = table
    (c, tar_c), _ = others
    response = start(api, {"segmentsFrom": [a, b], "segmentsTo": [c]})
    assert response.status_code == 200, response.content
    entry_id = response.json()["segmentLineageEntryId"]
    listed = entries(api)[entry_id]
    assert listed["state"] == "IN_PROGRESS" and listed["segmentsFrom"] == [a, b]
    assert listed["segmentsTo"] == [c] and listed["timestamp"] > 0

    # the segments bound to a live entry cannot be deleted behind its back
    refused = api.delete(f"{BASE}/{a}?type=OFFLINE")
    assert refused.status_code == 409 and "lineage" in refused.json()["error"]
    # ending before segmentsTo are uploaded is refused
    early = call(api, "end", entry_id)
    assert early.status_code == 409 and c in early.json()["error"]

    assert upload(api, tar_c).status_code == 200
    settle()
    url = f"{BASE}/endReplaceSegments?type=OFFLINE&segmentLineageEntryId={entry_id}"
    renamed = api.post(url, {"segmentsTo": ["other"]}, format="json")
    assert renamed.status_code == 400 and "fixed at start" in renamed.json()["error"]
    done = call(api, "end", entry_id)
    assert done.status_code == 200, done.content
    assert done.json() == {"segmentLineageEntryId": entry_id, "state": "COMPLETED"}
    assert entries(api)[entry_id]["state"] == "COMPLETED"
    # segmentsFrom stay (for a revert) until retention; ending again is a no-op
    assert {a, b, c} <= set(store.ideal_state(TABLE).segments)
    assert call(api, "end", entry_id).json()["state"] == "COMPLETED"

    reverted = call(api, "revert", entry_id)
    assert reverted.status_code == 200 and reverted.json()["state"] == "REVERTED"
    # c was served: it is left for retention, not deleted under the brokers' feet
    assert c in store.ideal_state(TABLE).segments
    again = call(api, "revert", entry_id)
    assert again.status_code == 409 and "already REVERTED" in again.json()["error"]
    ended = call(api, "end", entry_id)
    assert ended.status_code == 409 and "reverted" in ended.json()["error"]


def test_errors_name_what_is_wrong(api, store, table):
    a, b, others, _ = table
    (c, _), (d, _) = others
    unknown_table = api.post("/segments/nope/startReplaceSegments?type=OFFLINE",
                             {"segmentsFrom": [a]}, format="json")  # fmt: skip
    assert unknown_table.status_code == 404 and "nope" in unknown_table.json()["error"]
    cases = [
        ({"segmentsFrom": ["missing_seg"], "segmentsTo": [c]}, 404, "missing_seg"),
        ({"segmentsFrom": [a], "segmentsTo": [a]}, 400, "both segmentsFrom and segmentsTo"),
        ({}, 400, "nothing to replace"),
        ({"segmentsFrom": [a], "segmentsTo": ["x,y"]}, 400, "must not contain"),
        ({"segmentsFrom": [a, a], "segmentsTo": [c]}, 400, "listed twice"),
        ({"segmentsFrom": a, "segmentsTo": [c]}, 400, "segmentsFrom"),
        ({"segmentsFrom": [a], "segmentsTo": [b]}, 409, "being served"),
    ]
    for body, status, message in cases:
        response = start(api, body)
        assert response.status_code == status, (body, response.content)
        assert message in response.json()["error"], (body, response.json())
    bad_type = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}, type="HYBRID")
    assert bad_type.status_code == 400 and "type" in bad_type.json()["error"]
    missing_id = api.post(f"{BASE}/endReplaceSegments?type=OFFLINE")
    assert missing_id.status_code == 400 and "segmentLineageEntryId" in missing_id.json()["error"]
    for verb in ("end", "revert"):
        response = call(api, verb, "no-such-entry")
        assert response.status_code == 404 and "no-such-entry" in response.json()["error"]

    first = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    overlap = start(api, {"segmentsFrom": [a, b], "segmentsTo": [d]})
    assert overlap.status_code == 409 and "forceCleanup" in overlap.json()["error"]
    same_target = start(api, {"segmentsFrom": [b], "segmentsTo": [c]})
    assert same_target.status_code == 409 and first in same_target.json()["error"]
    unforced = call(api, "revert", first)
    assert unforced.status_code == 409 and "forceRevert" in unforced.json()["error"]
    assert entries(api)[first]["state"] == "IN_PROGRESS"  # nothing changed


def test_force_cleanup_reverts_a_failed_attempt_and_deletes_its_upload(api, store, table):
    a, b, others, _ = table
    (c, tar_c), (d, _) = others
    failed = start(api, {"segmentsFrom": [a, b], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200  # the attempt died after this upload
    retry = start(api, {"segmentsFrom": [a, b], "segmentsTo": [d]}, forceCleanup="true")
    assert retry.status_code == 200, retry.content
    listed = entries(api)
    assert listed[failed]["state"] == "REVERTED"
    assert listed[retry.json()["segmentLineageEntryId"]]["state"] == "IN_PROGRESS"
    assert c not in store.ideal_state(TABLE).segments  # never served, deleted at once
    assert store.segment_metadata(TABLE, c) is None

    # a retry that reuses the failed attempt's target name keeps it (and un-hides it there)
    again = start(api, {"segmentsFrom": [a, b], "segmentsTo": [d]}, forceCleanup="true")
    assert again.status_code == 200, again.content
    listed = entries(api)
    assert listed[retry.json()["segmentLineageEntryId"]] == {
        **listed[retry.json()["segmentLineageEntryId"]], "state": "REVERTED", "segmentsTo": []
    }  # fmt: skip


def test_force_revert_of_an_unfinished_replacement_deletes_its_upload(api, store, table):
    a, _, others, _ = table
    (c, tar_c), _ = others
    entry_id = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    response = call(api, "revert", entry_id, forceRevert="true")
    assert response.status_code == 200 and response.json()["state"] == "REVERTED"
    assert c not in store.ideal_state(TABLE).segments
    # a is free again: it can be replaced anew
    assert start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).status_code == 200


def test_end_waits_for_segments_to_come_online(api, store, table, monkeypatch):
    a, b, others, settle = table
    (c, tar_c), _ = others
    monkeypatch.setattr(segment_lineage, "ONLINE_WAIT_S", 0.5)
    entry_id = start(api, {"segmentsFrom": [a, b], "segmentsTo": [c]}).json()[
        "segmentLineageEntryId"
    ]
    assert upload(api, tar_c).status_code == 200  # assigned, but no server has loaded it
    response = call(api, "end", entry_id)
    assert response.status_code == 409 and "not ONLINE" in response.json()["error"]
    assert entries(api)[entry_id]["state"] == "IN_PROGRESS"
    settle()
    assert call(api, "end", entry_id).status_code == 200


def test_retention_deletes_replaced_and_reverted_segments_then_the_entries(api, store, table):
    a, b, others, settle = table
    (c, tar_c), (d, tar_d) = others
    done = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    settle()
    assert call(api, "end", done).status_code == 200
    dropped = start(api, {"segmentsFrom": [b], "segmentsTo": [d]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_d).status_code == 200
    settle()
    assert call(api, "end", dropped).status_code == 200
    assert call(api, "revert", dropped).status_code == 200

    # within the replaced-segments retention (1d by default) only the reverted upload goes
    assert clean_up_lineage(store, TABLE, {}, now_ms()) == [d]
    assert sorted(store.ideal_state(TABLE).segments) == sorted([a, b, c])
    settle()
    assert clean_up_lineage(store, TABLE, {}, now_ms()) == []
    assert set(read_lineage(store, TABLE).entries) == {done}  # d gone: its entry too

    config = {"replacedSegmentsRetentionPeriod": "0d"}
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == [a]
    settle()
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == []
    assert read_lineage(store, TABLE).entries == {}
    assert sorted(store.ideal_state(TABLE).segments) == sorted([b, c])


def test_abandoned_replacement_is_cleaned_after_its_period(api, store, table):
    a, _, others, settle = table
    (c, tar_c), _ = others
    entry_id = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    settle()
    assert clean_up_lineage(store, TABLE, {}, now_ms()) == []  # still within 1d
    config = {"lineageEntryCleanupRetentionPeriod": "1s"}
    later = now_ms() + 2000
    assert clean_up_lineage(store, TABLE, config, later) == [c]
    # reverted, not dropped: the entry goes on hiding c
    entry = read_lineage(store, TABLE).entries[entry_id]
    assert entry.state is LineageEntryState.REVERTED and entry.timestamp == later

    # the abandoned uploader comes back late: c is hidden next to a, and deleted again
    assert upload(api, tar_c).status_code == 200
    settle()
    lineage = read_lineage(store, TABLE)
    assert c not in lineage_consistent_segments(online_segments(store, TABLE), lineage)
    assert clean_up_lineage(store, TABLE, config, later) == [c]
    assert entry_id in read_lineage(store, TABLE).entries
    settle()
    # c gone from the table and the view: the entry is dropped
    assert clean_up_lineage(store, TABLE, config, later) == []
    assert entry_id not in read_lineage(store, TABLE).entries
    assert sorted(store.ideal_state(TABLE).segments) == sorted([a, table[1]])


def test_replaced_segments_wait_for_their_replacements_to_be_online(api, store, table):
    a, b, others, settle = table
    (c, tar_c), _ = others
    entry_id = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    settle()
    assert call(api, "end", entry_id).status_code == 200
    # c's only replica goes OFFLINE: deleting a now would lose its rows
    view = store.external_view(TABLE)
    replicas = dict(view.segments)
    replicas[c] = {server: "OFFLINE" for server in replicas[c]}
    store.put_external_view(ResourceAssignment(TABLE, replicas))
    config = {"replacedSegmentsRetentionPeriod": "0d"}
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == []
    assert sorted(store.ideal_state(TABLE).segments) == sorted([a, b, c])
    assert read_lineage(store, TABLE).entries[entry_id].state is LineageEntryState.COMPLETED
    # ONLINE again: the next run deletes a, and the one after drops the entry
    settle()
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == [a]
    settle()
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == []
    assert read_lineage(store, TABLE).entries == {}


def test_deleting_all_segments_drops_the_lineage(api, store, table):
    a, _, others, _ = table
    (c, _), _ = others
    assert start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).status_code == 200
    assert api.delete(f"{BASE}?type=OFFLINE").status_code == 200
    assert read_lineage(store, TABLE) is None


def test_time_retention_leaves_segments_of_a_live_entry_to_the_lineage(api, store, table):
    a, b, others, _ = table
    (c, tar_c), _ = others
    entry_id = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    # every airline segment (2014) is past the table's retention with today's clock
    response = api.get("/periodictask/run?taskname=RetentionManager&tableName=airlineStats")
    assert response.status_code == 200, response.content
    report = response.json()["taskReport"]
    assert report["deletedSegments"] == {TABLE: [b]}
    assert report["deletedByLineage"] == {}
    assert sorted(store.ideal_state(TABLE).segments) == sorted([a, c])
    assert entries(api)[entry_id]["state"] == "IN_PROGRESS"


@pytest.mark.django_db(transaction=True)
def test_racing_starts_on_the_same_segments_admit_exactly_one(store, table):
    a, b, others, _ = table
    (c, _), (d, _) = others
    results: list[object] = []
    barrier = threading.Barrier(4)

    def attempt(target: str) -> None:
        barrier.wait()
        try:
            results.append(segment_lineage.start_replace_segments(store, TABLE, [a, b], [target]))
        except Conflict as exc:
            results.append(exc)
        finally:
            connection.close()  # this thread's database connection

    threads = [threading.Thread(target=attempt, args=(t,)) for t in (c, d, f"{c}_x", f"{d}_x")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1 and len(results) == 4, results
    assert list(read_lineage(store, TABLE).entries) == winners


def test_replaced_segments_whose_replacement_was_replaced_in_turn(api, store, table):
    """a -> c, then c -> d: once c is deleted, a's rows live on in d, so a may go."""
    a, b, others, settle = table
    (c, tar_c), (d, tar_d) = others
    first = start(api, {"segmentsFrom": [a], "segmentsTo": [c]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_c).status_code == 200
    settle()
    assert call(api, "end", first).status_code == 200
    second = start(api, {"segmentsFrom": [c], "segmentsTo": [d]}).json()["segmentLineageEntryId"]
    assert upload(api, tar_d).status_code == 200
    settle()
    assert call(api, "end", second).status_code == 200
    # c and d OFFLINE: neither a nor c may go (their rows would be served nowhere)
    online = dict(store.external_view(TABLE).segments)
    off = {server: "OFFLINE" for server in online[c]}
    replicas = {**online, c: off, d: off}
    store.put_external_view(ResourceAssignment(TABLE, replicas))
    config = {"replacedSegmentsRetentionPeriod": "0d"}
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == []
    # c OFFLINE but d ONLINE: c's rows, and so a's, are in d: both go
    replicas = {**online, c: off}
    store.put_external_view(ResourceAssignment(TABLE, replicas))
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == sorted([a, c])
    settle()
    assert clean_up_lineage(store, TABLE, config, now_ms() + 1) == []
    assert read_lineage(store, TABLE).entries == {}
    assert sorted(store.ideal_state(TABLE).segments) == sorted([b, d])
