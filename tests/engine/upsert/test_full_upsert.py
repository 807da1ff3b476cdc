"""FULL upsert on real consuming and committed segments against the reference model: every
answer (COUNT, SUM, per-key rows, GROUP BY, with and without skipUpsert) after consumption,
after each commit and after restarts (segments loaded in any order, with and without
snapshots), with out-of-order values, ties, deletes and re-inserts."""

from __future__ import annotations

import random

import pytest

from engine.upsert import ServerDefaults
from tests.engine.upsert.harness import Server
from tests.engine.upsert.oracle import UpsertOracle

SCHEMA = {
    "schemaName": "orders",
    "primaryKeyColumns": ["id"],
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "LONG"},
        {"name": "city", "dataType": "STRING"},
        {"name": "deleted", "dataType": "BOOLEAN"},
    ],
    "metricFieldSpecs": [{"name": "amount", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip


def config(**upsert) -> dict:
    return {
        "tableName": "orders",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "orders", "replication": "1"},
        "tableIndexConfig": {"invertedIndexColumns": ["city"]},
        "routing": {"instanceSelectorType": "strictReplicaGroup"},
        "upsertConfig": {"mode": "FULL", **upsert},
        "ingestionConfig": {"streamIngestionConfig": {"streamConfigMaps": [{
            "streamType": "kafka", "stream.kafka.topic.name": "orders",
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }]}},
    }  # fmt: skip


def events(n: int, keys: int, seed: int, *, deletes: float = 0.05) -> list[dict]:
    rnd = random.Random(seed)
    out, clock = [], 1000
    for _ in range(n):
        clock += rnd.randint(0, 3)
        ts = clock - rnd.choice([0, 0, 0, 0, 5, 50])  # some out of order, some ties
        out.append({
            "id": rnd.randrange(keys), "ts": ts, "amount": rnd.randint(-50, 500),
            "city": rnd.choice(["a", "b", "c", "d"]), "deleted": rnd.random() < deletes,
        })  # fmt: skip
    return out


def check(server: Server, oracle: UpsertOracle) -> None:
    live = oracle.default()
    stored = oracle.skip_upsert()
    assert server.rows("SELECT COUNT(*), SUM(amount) FROM orders") == [
        [len(live), sum(r["amount"] for r in live)]
    ]
    got = server.rows("SELECT id, ts, amount, city FROM orders ORDER BY id LIMIT 100000")
    assert got == sorted([r["id"], r["ts"], r["amount"], r["city"]] for r in live)
    groups: dict = {}
    for r in live:
        count, total = groups.get(r["city"], (0, 0))
        groups[r["city"]] = (count + 1, total + r["amount"])
    got = server.rows("SELECT city, COUNT(*), SUM(amount) FROM orders GROUP BY city ORDER BY city")
    assert got == [[c, n, s] for c, (n, s) in sorted(groups.items())]
    assert server.rows("SELECT COUNT(*) FROM orders WHERE city = 'b'") == [
        [sum(1 for r in live if r["city"] == "b")]
    ]
    assert server.rows("SELECT COUNT(*), SUM(amount) FROM orders", skipUpsert=True) == [
        [len(stored), sum(r["amount"] for r in stored)]
    ]


def oracle_for(**kwargs) -> UpsertOracle:
    return UpsertOracle(lambda r: r["id"], lambda r: r["ts"], delete_column="deleted", **kwargs)


@pytest.mark.parametrize("snapshot", [False, True])
def test_full_upsert_matches_the_model_through_commits_and_restarts(tmp_path, snapshot):
    defaults = ServerDefaults(snapshot=snapshot, preload=snapshot)
    server = Server(SCHEMA, config(deleteRecordColumn="deleted"), tmp_path, defaults=defaults)
    oracle = oracle_for()
    stream = events(6000, 400, seed=7)
    for part in range(4):
        rows = stream[part * 1500 : (part + 1) * 1500]
        server.consume(0, rows[:900])
        for r in rows[:900]:
            oracle.add(r)
        check(server, oracle)  # mid-segment
        server.consume(0, rows[900:])
        for r in rows[900:]:
            oracle.add(r)
        server.commit(0)
        check(server, oracle)  # after the commit
    extra = events(700, 400, seed=8)
    extra = [{**r, "ts": r["ts"] + 6000} for r in extra]
    server.consume(0, extra)
    for r in extra:
        oracle.add(r)
    server.restart(shuffle_seed=3)
    check(server, oracle)
    server.restart()
    check(server, oracle)


def test_out_of_order_column_and_drop(tmp_path):
    rows = events(2000, 100, seed=11, deletes=0)
    server = Server(SCHEMA | {"dimensionFieldSpecs": SCHEMA["dimensionFieldSpecs"] + [
        {"name": "ooo", "dataType": "BOOLEAN"}]},
        config(outOfOrderRecordColumn="ooo"), tmp_path / "a")  # fmt: skip
    oracle = UpsertOracle(lambda r: r["id"], lambda r: r["ts"], ooo_column="ooo")
    server.consume(0, rows)
    for r in rows:
        oracle.add(r)
    flagged = sum(r["ooo"] for r in oracle.stored)
    assert flagged > 0
    assert server.rows("SELECT COUNT(*) FROM orders WHERE ooo = true", skipUpsert=True) == [
        [flagged]
    ]
    assert server.rows("SELECT COUNT(*) FROM orders WHERE ooo = true") == [[0]]
    dropping = Server(SCHEMA, config(dropOutOfOrderRecord=True), tmp_path / "b")
    dropped = UpsertOracle(lambda r: r["id"], lambda r: r["ts"], drop_out_of_order=True)
    dropping.consume(0, rows)
    for r in rows:
        dropped.add(r)
    assert dropping.rows("SELECT COUNT(*) FROM orders", skipUpsert=True) == [[len(dropped.stored)]]
    assert len(dropped.stored) == len(rows) - flagged
    check_rows = dropping.rows("SELECT id, ts, amount FROM orders ORDER BY id LIMIT 1000")
    assert check_rows == sorted([r["id"], r["ts"], r["amount"]] for r in dropped.default())


def test_a_tie_goes_to_the_later_record_and_across_segments_to_the_higher_sequence(tmp_path):
    server = Server(SCHEMA, config(), tmp_path)
    server.consume(0, [{"id": 1, "ts": 10, "amount": 1, "city": "a", "deleted": False},
                       {"id": 1, "ts": 10, "amount": 2, "city": "a", "deleted": False}])  # fmt: skip
    assert server.rows("SELECT amount FROM orders") == [[2]]
    server.commit(0)
    server.consume(0, [{"id": 1, "ts": 10, "amount": 3, "city": "a", "deleted": False}])
    server.commit(0)
    assert server.rows("SELECT amount FROM orders") == [[3]]
    server.restart(shuffle_seed=1)  # the later segment loads first: still the higher sequence
    assert server.rows("SELECT amount FROM orders") == [[3]]


def test_delete_then_reinsert_and_older_rows_stay_hidden(tmp_path):
    server = Server(SCHEMA, config(deleteRecordColumn="deleted"), tmp_path)
    row = {"id": 5, "city": "a", "amount": 1}
    server.consume(0, [{**row, "ts": 10, "deleted": False}, {**row, "ts": 20, "deleted": True}])
    assert server.rows("SELECT COUNT(*) FROM orders") == [[0]]
    assert server.rows("SELECT COUNT(*) FROM orders", skipUpsertDelete=True) == [[1]]
    server.consume(0, [{**row, "ts": 15, "amount": 9, "deleted": False}])  # older: hidden
    assert server.rows("SELECT COUNT(*) FROM orders") == [[0]]
    server.commit(0)
    server.consume(0, [{**row, "ts": 30, "amount": 7, "deleted": False}])  # re-inserted
    assert server.rows("SELECT amount FROM orders") == [[7]]


def test_rows_without_a_key_or_comparison_value_are_error_rows(tmp_path):
    server = Server(SCHEMA, config(), tmp_path)
    results = server.consume(0, [
        {"id": 1, "ts": 5, "amount": 1, "city": "a"},
        {"ts": 6, "amount": 2, "city": "a"},
        {"id": 2, "amount": 3, "city": "a"},
        {"id": 3, "ts": 7, "amount": 4, "city": "a"},
    ])  # fmt: skip
    errors = [e for r in results for e in r.errors]
    assert [e.row for e in errors] == [1, 2]
    assert "primary key" in errors[0].message and "comparison column" in errors[1].message
    assert server.rows("SELECT id FROM orders ORDER BY id") == [[1], [3]]


def test_the_model_agrees_with_duckdb():
    """The reference model's FULL-upsert answer is each key's row with the largest value,
    the later offset on a tie, unless that row is a delete: one DuckDB window query."""
    import duckdb
    import pyarrow as pa

    stream = events(20000, 1500, seed=12)
    oracle = oracle_for()
    for r in stream:
        oracle.add(r)
    produced = pa.Table.from_pylist([{**r, "offset": i} for i, r in enumerate(stream)])
    connection = duckdb.connect()
    connection.register("produced", produced)
    rows = connection.sql("""
        SELECT id, ts, amount FROM (
            SELECT *, row_number() OVER (PARTITION BY id ORDER BY ts DESC, "offset" DESC) AS rn
            FROM produced) WHERE rn = 1 AND NOT deleted ORDER BY id""").fetchall()
    assert [list(r) for r in rows] == sorted(
        [r["id"], r["ts"], r["amount"]] for r in oracle.default()
    )
