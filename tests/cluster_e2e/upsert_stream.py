"""What the upsert end-to-end tests share: a generated change stream (out-of-order values,
ties, deletes, re-inserts, partial updates with nulls) partitioned by key, the tables that
read it (FULL with deletedKeysTTL and snapshots, PARTIAL with every strategy, dedup), the
reference model fed in each partition's offset order, and the checks of broker answers
against it."""

from __future__ import annotations

import random
import time

import orjson
import requests
from confluent_kafka import Producer

from engine.realtime.llc_name import LLCSegmentName
from tests.cluster_e2e.realtime_helpers import kafka_stream_configs
from tests.engine.upsert.oracle import DedupOracle, UpsertOracle
from tests.engine.upsert.test_partial_upsert import merge as partial_merge

PARTITIONS = 4
STRATEGIES = {"ow": "OVERWRITE", "fow": "FORCE_OVERWRITE", "ign": "IGNORE", "inc": "INCREMENT",
              "app": "APPEND", "uni": "UNION", "mx": "MAX", "mn": "MIN"}  # fmt: skip
_TIME = {"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
         "granularity": "1:MILLISECONDS"}  # fmt: skip


def schema(name: str, *, partial: bool = False) -> dict:
    dims = [{"name": "id", "dataType": "LONG"}, {"name": "city", "dataType": "STRING"},
            {"name": "deleted", "dataType": "BOOLEAN"}]  # fmt: skip
    metrics = [{"name": "amount", "dataType": "LONG"}]
    if partial:
        dims += [{"name": c, "dataType": "STRING"} for c in ("ow", "fow", "ign")]
        dims += [
            {"name": c, "dataType": "STRING", "singleValueField": False} for c in ("app", "uni")
        ]
        metrics += [{"name": "inc", "dataType": "LONG"}, {"name": "mx", "dataType": "DOUBLE"},
                    {"name": "mn", "dataType": "LONG"}]  # fmt: skip
    return {"schemaName": name, "primaryKeyColumns": ["id"], "dimensionFieldSpecs": dims,
            "metricFieldSpecs": metrics, "dateTimeFieldSpecs": [_TIME],
            "enableColumnBasedNullHandling": partial}  # fmt: skip


def table(
    name: str, bootstrap: str, topic: str, segment_rows: int, replicas: int, **sections
) -> dict:
    streams = kafka_stream_configs(bootstrap, topic, segment_rows)
    streams["realtime.segment.flush.threshold.segment.rows"] = str(segment_rows)
    return {
        "tableName": name, "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": name,
                           "replicasPerPartition": str(replicas)},
        "tableIndexConfig": {"invertedIndexColumns": ["city"], "streamConfigs": streams},
        "routing": {"instanceSelectorType": "strictReplicaGroup"},
        "tenants": {}, "metadata": {}, **sections,
    }  # fmt: skip


def events(n: int, keys: int, seed: int) -> list[dict]:
    """``n`` change events over ``keys`` keys: mostly increasing times with some late ones
    and ties, 5% deletes (so re-inserts follow), partial-update columns often absent."""
    rnd = random.Random(seed)
    out, clock = [], 1_000_000

    def maybe(value):
        return None if rnd.random() < 0.3 else value

    for _ in range(n):
        clock += rnd.randint(0, 2)
        row = {
            "id": rnd.randrange(keys), "ts": clock - rnd.choice([0] * 6 + [1, 40, 400]),
            "amount": rnd.randint(-100, 1000), "city": rnd.choice(["ams", "ber", "cph", "dub"]),
            "deleted": rnd.random() < 0.05,
            "ow": maybe(rnd.choice("xyz")), "fow": maybe(rnd.choice("pq")),
            "ign": maybe(rnd.choice("uv")), "inc": maybe(rnd.randint(-5, 10)),
            "app": maybe([rnd.choice("ab")]), "uni": maybe([rnd.choice("cdef")]),
            "mx": maybe(round(rnd.uniform(-1, 1), 6)), "mn": maybe(rnd.randint(-9, 9)),
        }  # fmt: skip
        out.append({k: v for k, v in row.items() if v is not None})
    return out


class ChangeStream:
    """Produces events to partition ``id % 4`` (in order: idempotent producer) and feeds the
    models the same rows in the same per-partition order."""

    def __init__(self, bootstrap: str, topic: str, models: dict) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                                  "enable.idempotence": True})  # fmt: skip
        self.models = models  # name -> list of per-partition models
        self.offsets = [0] * PARTITIONS

    def produce(self, rows: list[dict]) -> None:
        for row in rows:
            partition = row["id"] % PARTITIONS
            self.producer.produce(self.topic, orjson.dumps(row), partition=partition)
            for models in self.models.values():
                models[partition].add_at(self.offsets[partition], row)
            self.offsets[partition] += 1
            self.producer.poll(0)
        assert self.producer.flush(60) == 0


class SegmentedOracle:
    """The model of one partition, purged where each segment starts (every ``rows``)."""

    def __init__(self, model, rows: int) -> None:
        self.model, self.rows = model, rows

    def add_at(self, offset: int, row: dict) -> None:
        if offset and offset % self.rows == 0 and hasattr(self.model, "purge"):
            self.model.purge()
        self.model.add(row)


def full_models(rows: int, deleted_ttl: int) -> list:
    return [SegmentedOracle(UpsertOracle(lambda r: r["id"], lambda r: r["ts"],
                                         delete_column="deleted", deleted_ttl=deleted_ttl), rows)
            for _ in range(PARTITIONS)]  # fmt: skip


def partial_models(rows: int) -> list:
    def merge(prev, new):
        return partial_merge_only(prev, new)

    return [SegmentedOracle(UpsertOracle(lambda r: r["id"], lambda r: r["ts"],
                                         delete_column="deleted", merge=merge), rows)
            for _ in range(PARTITIONS)]  # fmt: skip


def partial_merge_only(prev: dict, new: dict) -> dict:
    """The unit test's merge over this table's columns (the rest defaults to OVERWRITE)."""
    merged = partial_merge(prev, new)
    for column in ("amount", "city", "deleted"):
        merged[column] = prev.get(column) if new.get(column) is None else new[column]
    return {k: v for k, v in merged.items() if k in _PARTIAL_COLUMNS}


_PARTIAL_COLUMNS = {"id", "ts", "amount", "city", "deleted", *STRATEGIES}


def dedup_models(ttl: int) -> list:
    return [DedupOracle(lambda r: r["id"], lambda r: r["ts"], ttl) for _ in range(PARTITIONS)]


class DedupAt:
    def __init__(self, model) -> None:
        self.model = model

    def add_at(self, _offset: int, row: dict) -> None:
        self.model.add(row)


def drop_compacted(compacted: list, infos: list[dict], current: list[set[int]],
                   segment_rows: int) -> None:  # fmt: skip
    """Record in the per-partition ``CompactedModel``s what each COMPLETED UpsertCompactionTask
    subtask of ``infos`` removed from its segment: the versions that were not their keys'
    current ones (``current``, per partition, read before the task) when the bitmap was read.
    Segment ``n`` of a partition holds its offsets ``n * segment_rows`` onwards."""
    for info in infos:
        if info["state"] != "COMPLETED":
            continue
        llc = LLCSegmentName.parse(info["taskConfig"]["configs"]["segmentName"])
        model = compacted[llc.partition]
        rows = model.oracle.stored[llc.sequence * segment_rows :][:segment_rows]
        model.dropped |= {id(r) for r in rows if id(r) not in current[llc.partition]}


def live(models) -> list[dict]:
    return [row for m in models for row in m.model.default()]


def stored(models) -> list[dict]:
    return [row for m in models for row in m.model.skip_upsert()]


def query(broker_url: str, sql: str, **options) -> dict:
    body = {"sql": sql}
    if options:
        body["queryOptions"] = ";".join(f"{k}={v}" for k, v in options.items())
    response = requests.post(f"{broker_url}/query/sql", json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert not answer.get("exceptions"), answer["exceptions"]
    return answer


def rows_of(broker_url: str, sql: str, **options) -> list:
    return query(broker_url, sql, **options)["resultTable"]["rows"]


def wait_consumed(broker_url: str, name: str, expected: int, timeout_s: float = 240) -> None:
    """Until every produced row is indexed on every replica: skipUpsert counts each stored
    version, and four answers in a row (the broker alternates replica groups) agree."""
    deadline = time.monotonic() + timeout_s
    last, streak = None, 0
    while time.monotonic() < deadline:
        try:
            last = rows_of(broker_url, f"SELECT COUNT(*) FROM {name}", skipUpsert="true")
            streak = streak + 1 if last == [[expected]] else 0
            if streak == 4:
                return
        except (requests.RequestException, AssertionError) as exc:
            last, streak = exc, 0
        time.sleep(0.2 if streak else 0.5)
    raise AssertionError(f"{name}: expected {expected} stored rows, last answer {last}")


def check_groups(broker_url: str, name: str, rows: list[dict]) -> None:
    """A GROUP BY over ``name`` equals the model's ``rows`` grouped."""
    groups: dict = {}
    for r in rows:
        count, total = groups.get(r["city"], (0, 0))
        groups[r["city"]] = (count + 1, total + r["amount"])
    got = rows_of(broker_url, f"SELECT city, COUNT(*), SUM(amount) FROM {name} "
                              "GROUP BY city ORDER BY city")  # fmt: skip
    assert got == [[c, n, s] for c, (n, s) in sorted(groups.items())]


def check_full(broker_url: str, name: str, models, *, repeat: int = 2) -> None:
    """Every answer equals the model's; asked ``repeat`` times, so both replica groups
    answer (the broker picks the group by request id)."""
    rows = live(models)
    every = stored(models)
    for _ in range(repeat):
        assert rows_of(broker_url, f"SELECT COUNT(*), SUM(amount) FROM {name}") == [
            [len(rows), sum(r["amount"] for r in rows)]
        ]
        got = rows_of(
            broker_url, f"SELECT id, ts, amount, city FROM {name} ORDER BY id LIMIT 100000"
        )
        assert got == sorted([r["id"], r["ts"], r["amount"], r["city"]] for r in rows)
        check_groups(broker_url, name, rows)
        assert rows_of(
            broker_url, f"SELECT COUNT(*), SUM(amount) FROM {name}", skipUpsert="true"
        ) == [[len(every), sum(r["amount"] for r in every)]]


PARTIAL_SELECT = ["id", "ts", "amount", "ow", "fow", "ign", "inc", "mx", "mn", "app", "uni"]


def check_partial(broker_url: str, name: str, models) -> None:
    rows = live(models)
    expected = sorted(([r.get(c) for c in PARTIAL_SELECT] for r in rows), key=lambda r: r[0])
    got = rows_of(broker_url, f"SELECT {', '.join(PARTIAL_SELECT)} FROM {name} ORDER BY id "
                              "LIMIT 100000", enableNullHandling="true")  # fmt: skip
    for row in got:
        row[9], row[10] = row[9] or None, row[10] or None
    assert got == expected
    assert rows_of(broker_url, f"SELECT COUNT(*) FROM {name}", skipUpsert="true") == [
        [len(stored(models))]
    ]


def check_dedup(broker_url: str, name: str, models) -> None:
    kept = [r for m in models for r in m.model.kept]
    assert rows_of(broker_url, f"SELECT COUNT(*), SUM(amount) FROM {name}") == [
        [len(kept), sum(r["amount"] for r in kept)]
    ]
    got = rows_of(broker_url, f"SELECT id, ts FROM {name} ORDER BY id, ts LIMIT 100000")
    assert got == sorted([r["id"], r["ts"]] for r in kept)
    check_groups(broker_url, name, kept)
