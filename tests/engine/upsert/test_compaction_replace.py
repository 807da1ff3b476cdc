"""A committed segment replaced by its compacted copy (UpsertCompactionTask's refresh: the same
name, only the docs a valid-doc bitmap kept) on real segments against the reference model: the
new copy takes over exactly the keys the old one held, docs superseded after the bitmap was
read stay superseded, and answers stay exact through later updates, commits and restarts
(with and without valid-doc snapshots and preload)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.segment import build_segment, load_segment
from engine.upsert import ServerDefaults
from tests.engine.upsert.harness import Server
from tests.engine.upsert.test_full_upsert import SCHEMA, check, config, events, oracle_for

SEGMENT_ROWS = 1500


class CompactedModel:
    """The oracle, with the versions that compaction removed gone from skipUpsert."""

    def __init__(self, oracle) -> None:
        self.oracle = oracle
        self.dropped: set[int] = set()

    def default(self) -> list[dict]:
        return self.oracle.default()

    def skip_upsert(self) -> list[dict]:
        return [r for r in self.oracle.stored if id(r) not in self.dropped]

    def current(self) -> set[int]:
        """The rows that are their keys' current versions (tombstones included)."""
        return {id(e.row) for e in self.oracle.state.values()}


def compact(server: Server, model: CompactedModel, sequence: int, valid, current: set[int],
            tmp_path) -> None:  # fmt: skip
    """Rebuild segment ``sequence`` of partition 0 with the docs of ``valid`` and load it as a
    refresh; ``current``: the model's current versions when ``valid`` was read."""
    name = server.name(0, sequence)
    old = server.served[name]
    rows = old.to_arrow()
    kept = rows.take(np.asarray(sorted(valid), dtype=np.int64))
    built = build_segment(kept, server.schema, server.config.without_ingestion_transforms(),
                          tmp_path / f"compacted-{sequence}", segment_name=name)  # fmt: skip
    segment = load_segment(built.path)

    def publish() -> None:
        server.served[name] = segment

    server.meta.add_segment(name, segment, partition=0, sequence=sequence, creation_ms=1,
                            on_publish=publish)  # fmt: skip
    server.committed = [(p, s, built.path if s == sequence else d) for p, s, d in server.committed]
    stored = model.oracle.stored[sequence * SEGMENT_ROWS : (sequence + 1) * SEGMENT_ROWS]
    model.dropped |= {id(r) for r in stored if id(r) not in current}
    assert kept.num_rows == len(valid) < rows.num_rows


def feed(server: Server, model: CompactedModel, rows: list[dict]) -> None:
    server.consume(0, rows)
    for row in rows:
        model.oracle.add(row)


@pytest.mark.parametrize("snapshot", [False, True])
def test_a_compacted_copy_replaces_its_segment_exactly(tmp_path, snapshot):
    defaults = ServerDefaults(snapshot=snapshot, preload=snapshot)
    server = Server(SCHEMA, config(deleteRecordColumn="deleted"), tmp_path, defaults=defaults)
    model = CompactedModel(oracle_for())
    stream = events(6 * SEGMENT_ROWS, 300, seed=11)
    for sequence in range(4):
        feed(server, model, stream[sequence * SEGMENT_ROWS : (sequence + 1) * SEGMENT_ROWS])
        server.commit(0)
    feed(server, model, stream[4 * SEGMENT_ROWS : 4 * SEGMENT_ROWS + 700])
    # a bitmap read, then updates that supersede some of the docs it keeps, then the swap
    stale = server.meta.tracked(server.name(0, 1)).valid.copy()
    current = model.current()
    feed(server, model, stream[4 * SEGMENT_ROWS + 700 : 5 * SEGMENT_ROWS])
    compact(server, model, 1, stale, current, tmp_path)
    check(server, model)
    # a fresh bitmap, with the tombstones it keeps
    compact(server, model, 0, server.meta.tracked(server.name(0, 0)).valid.copy(),
            model.current(), tmp_path)  # fmt: skip
    check(server, model)
    server.commit(0)
    late = [{**r, "ts": r["ts"] - 200} for r in stream[5 * SEGMENT_ROWS :]]  # many out of order
    feed(server, model, late)
    check(server, model)
    server.restart(shuffle_seed=5)
    check(server, model)
    server.restart()
    check(server, model)
