"""Dedup (with and without metadataTTL), upsert metadataTTL and deletedKeysTTL, every
hashFunction, composite and string keys, and SNAPSHOT consistency, against the model."""

from __future__ import annotations

import random

import pytest

from engine.upsert import ServerDefaults
from tests.engine.upsert.harness import Server
from tests.engine.upsert.oracle import DedupOracle, UpsertOracle
from tests.engine.upsert.test_full_upsert import SCHEMA, check, config, events

STREAM = {"streamIngestionConfig": {"streamConfigMaps": [{"streamType": "kafka"}]}}
DEDUP_SCHEMA = {
    "schemaName": "clicks",
    "primaryKeyColumns": ["user", "item"],
    "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"},
                            {"name": "item", "dataType": "INT"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip


def dedup_config(**dedup) -> dict:
    return {"tableName": "clicks", "tableType": "REALTIME", "ingestionConfig": STREAM,
            "segmentsConfig": {"timeColumnName": "ts", "replication": "1"},
            "routing": {"instanceSelectorType": "strictReplicaGroup"},
            "dedupConfig": {"dedupEnabled": True, **dedup}}  # fmt: skip


def clicks(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    return [{"user": rnd.choice("abcdef"), "item": rnd.randrange(40), "n": rnd.randint(1, 9),
             "ts": 1000 + i * 3 + rnd.randint(-20, 20)} for i in range(n)]  # fmt: skip


@pytest.mark.parametrize(("ttl", "hash_function"), [(0, "NONE"), (0, "MD5"), (150, "NONE"),
                                                     (150, "MURMUR3")])  # fmt: skip
def test_dedup_keeps_the_first_row_of_a_key(tmp_path, ttl, hash_function):
    server = Server(
        DEDUP_SCHEMA, dedup_config(metadataTTL=ttl, hashFunction=hash_function), tmp_path
    )
    oracle = DedupOracle(lambda r: (r["user"], r["item"]), lambda r: r["ts"], ttl)
    rows = clicks(3000, seed=ttl + len(hash_function))
    for start in range(0, 3000, 1000):
        server.consume(0, rows[start : start + 1000], batch=53)
        for r in rows[start : start + 1000]:
            oracle.add(r)
        expected = [[len(oracle.kept), sum(r["n"] for r in oracle.kept)]]
        assert server.rows("SELECT COUNT(*), SUM(n) FROM clicks") == expected
        # a duplicate is never indexed: skipUpsert changes nothing
        assert server.rows("SELECT COUNT(*), SUM(n) FROM clicks", skipUpsert=True) == expected
        server.commit(0)
        assert server.rows("SELECT COUNT(*), SUM(n) FROM clicks") == expected
    got = server.rows("SELECT user, item, ts FROM clicks ORDER BY user, item, ts LIMIT 10000")
    assert got == sorted([r["user"], r["item"], r["ts"]] for r in oracle.kept)
    server.restart()
    more = clicks(500, seed=99)
    server.consume(0, more)
    for r in more:
        oracle.add(r)
    assert server.rows("SELECT COUNT(*) FROM clicks") == [[len(oracle.kept)]]


@pytest.mark.parametrize("hash_function", ["NONE", "MD5", "MURMUR3", "XXHASH", "XXH128", "UUID"])
def test_every_hash_function_gives_the_same_answers(tmp_path, hash_function):
    server = Server(
        SCHEMA, config(deleteRecordColumn="deleted", hashFunction=hash_function), tmp_path
    )
    oracle = UpsertOracle(lambda r: r["id"], lambda r: r["ts"], delete_column="deleted")
    stream = events(2000, 150, seed=4)
    server.consume(0, stream[:1000])
    server.commit(0)
    server.consume(0, stream[1000:])
    for r in stream:
        oracle.add(r)
    check(server, oracle)
    server.restart(shuffle_seed=1)
    check(server, oracle)


def test_string_and_uuid_keys(tmp_path):
    import uuid

    schema = {**SCHEMA, "primaryKeyColumns": ["city", "uid"],
              "dimensionFieldSpecs": SCHEMA["dimensionFieldSpecs"] + [
                  {"name": "uid", "dataType": "STRING"}]}  # fmt: skip
    ids = [str(uuid.UUID(int=i * 7919)) for i in range(30)]
    for hash_function in ("NONE", "UUID"):
        server = Server(schema, config(hashFunction=hash_function), tmp_path / hash_function)
        oracle = UpsertOracle(lambda r: (r["city"], r["uid"]), lambda r: r["ts"])
        rows = [{**r, "uid": ids[r["id"] % 30]} for r in events(1500, 90, seed=3, deletes=0)]
        server.consume(0, rows[:700])
        server.commit(0)
        server.consume(0, rows[700:])
        for r in rows:
            oracle.add(r)
        assert server.rows("SELECT COUNT(*), SUM(amount) FROM orders") == [
            [len(oracle.default()), sum(r["amount"] for r in oracle.default())]
        ]


def test_metadata_ttl_and_deleted_keys_ttl(tmp_path):
    """Keys older than the watermark minus the TTL leave the map at the next segment start:
    metadataTTL keeps their docs valid (a later row shows a second version); deletedKeysTTL
    turns tombstones invalid (older rows could then re-insert)."""
    ttl_config = config(deleteRecordColumn="deleted", metadataTTL=400, deletedKeysTTL=200)
    defaults = ServerDefaults(snapshot=True)
    server = Server(SCHEMA, ttl_config, tmp_path, defaults=defaults)
    oracle = UpsertOracle(lambda r: r["id"], lambda r: r["ts"], delete_column="deleted",
                          metadata_ttl=400, deleted_ttl=200)  # fmt: skip
    stream = events(4000, 200, seed=21, deletes=0.1)
    for start in range(0, 4000, 500):
        rows = stream[start : start + 500]
        server.consume(0, rows)
        for r in rows:
            oracle.add(r)
        check(server, oracle)
        server.commit(0)
        oracle.purge()  # the next segment starts
        check(server, oracle)
    assert oracle.orphans, "the stream must let some keys expire"
    assert (tmp_path / "table" / "ttl.watermark.partition.0").exists()


def test_snapshot_consistency_serves_a_view_refreshed_on_demand(tmp_path):
    server = Server(SCHEMA, config(consistencyMode="SNAPSHOT", upsertViewRefreshIntervalMs=3_600_000),
                    tmp_path)  # fmt: skip
    row = {"id": 1, "city": "a", "deleted": False}
    server.consume(0, [{**row, "ts": 1, "amount": 10}])
    assert server.rows("SELECT amount FROM orders") == [[10]]
    server.consume(0, [{**row, "ts": 2, "amount": 20}, {**row, "id": 2, "ts": 2, "amount": 5}])
    # the shared view is an hour old at most: the first answer stays, exact for its moment
    assert server.rows("SELECT amount FROM orders") == [[10]]
    assert server.rows("SELECT amount FROM orders ORDER BY amount", upsertViewFreshnessMs=0) == [
        [5],
        [20],
    ]
    assert server.rows("SELECT SUM(amount) FROM orders", skipUpsertView=True) == [[25]]
