"""The replacement protocol's deletes under a scripted interleaving: a retried subtask's start
(forceCleanup, reusing its outputs' names) lands between the first attempt's revert writing
the lineage and deleting its uploads. Real ZooKeeper, real segments, a FakeServer."""

from __future__ import annotations

import pytest

from cluster.logic import segment_lineage
from cluster.logic.segment_lineage import (
    end_replace_segments,
    revert_replace_segments,
    start_replace_segments,
    table_segments,
)
from engine.clusterstate.lineage import read_lineage
from tests.cluster.conftest import upload
from tests.cluster.test_segment_lineage_api import TABLE, table  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_a_name_reclaimed_during_a_revert_is_not_deleted(api, store, table, monkeypatch):  # noqa: F811
    a, b, others, settle = table
    (c, tar_c), _ = others
    first = start_replace_segments(store, TABLE, [a, b], [c])
    assert upload(api, tar_c).status_code == 200  # the first attempt's upload
    settle()
    retried: list[str] = []
    write = segment_lineage.update_lineage

    def update_then_retry(*args, **kwargs):
        written = write(*args, **kwargs)
        # right after the revert's write (only): the retry claims C again
        monkeypatch.setattr(segment_lineage, "update_lineage", write)
        retried.append(start_replace_segments(store, TABLE, [a, b], [c], force_cleanup=True))
        return written

    monkeypatch.setattr(segment_lineage, "update_lineage", update_then_retry)
    revert_replace_segments(store, TABLE, first, force_revert=True)

    (retry,) = retried
    lineage = read_lineage(store, TABLE).entries
    assert lineage[first].state == "REVERTED" and lineage[first].segments_to == ()
    assert lineage[retry].state == "IN_PROGRESS" and lineage[retry].segments_to == (c,)
    # C now belongs to the retry: the first attempt's revert must not delete it
    assert c in table_segments(store, TABLE)
    assert upload(api, tar_c).status_code == 200  # the retry's own upload (a refresh)
    settle()
    assert end_replace_segments(store, TABLE, retry, online_wait_s=5) == "COMPLETED"
    assert c in store.ideal_state(TABLE).segments
