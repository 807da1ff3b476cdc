"""The consuming dictionary's batch-at-once id assignment gives what assigning ids one
distinct value at a time (the straightforward reference) gives, and a snapshot's rows read
without the sorted dictionary equal the rows read through it."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from engine.realtime.columns import DictionaryColumn
from engine.spi.schema import Schema


def _spec(data_type: str, single: bool = True):
    schema = Schema.from_json(
        {"schemaName": "t", "dimensionFieldSpecs": [
            {"name": "c", "dataType": data_type, "singleValueField": single}]}
    )  # fmt: skip
    return schema.field("c")


def _reference_ids(batches: list[list]) -> tuple[list[int], list]:
    """Ids by a dict probe per value in arrival order, and the values by id."""
    known: dict = {}
    ids, values = [], []
    for batch in batches:
        for value in batch:
            if value not in known:
                known[value] = len(known)
                values.append(value)
            ids.append(known[value])
    return ids, values


def _batches(make, rng: random.Random, count: int = 30) -> list[list]:
    return [[make(rng) for _ in range(rng.randint(0, 400))] for _ in range(count)]


CASES = {
    "STRING": (
        pa.string(),
        lambda r: f"v{r.randint(0, 2000)}" if r.random() < 0.5 else f"u{r.random()}",
    ),
    "LONG": (pa.int64(), lambda r: r.randint(-50, 50) if r.random() < 0.7 else r.getrandbits(60)),
    "DOUBLE": (pa.float64(), lambda r: r.choice([0.0, -0.0, 1.5, -2.25, r.random()])),
    "INT": (pa.int32(), lambda r: r.randint(0, 10)),
}


@pytest.mark.parametrize("data_type", sorted(CASES))
def test_batch_ids_equal_one_at_a_time_ids(data_type):
    arrow_type, make = CASES[data_type]
    rng = random.Random(hash(data_type) & 0xFFFF)
    batches = _batches(make, rng)
    column = DictionaryColumn(_spec(data_type), inverted=True)
    first = 0
    for batch in batches:
        column.append(pa.array(batch, type=arrow_type), first)
        first += len(batch)
    want_ids, want_values = _reference_ids(batches)
    got_ids = column.forward.view().tolist()
    assert got_ids == want_ids
    values = column.arrival_values(column.cardinality)
    values = values.tolist() if isinstance(values, np.ndarray) else values.to_pylist()
    assert values == want_values
    # every id's value, read back through the sorted dictionary, is the row's value
    ordered = column.sorted_dictionary(column.cardinality)
    sorted_values = ordered.values
    sorted_values = (
        sorted_values.tolist() if isinstance(sorted_values, np.ndarray)
        else sorted_values.to_pylist()
    )  # fmt: skip
    rows = [v for b in batches for v in b]
    assert [sorted_values[ordered.rank[i]] for i in got_ids] == rows


def test_zero_and_negative_zero_in_one_batch_share_an_id_like_a_dict_key():
    column = DictionaryColumn(_spec("DOUBLE"), inverted=False)
    column.append(pa.array([0.0, -0.0, 3.0, 0.0]), 0)
    column.append(pa.array([-0.0, 3.0, 4.0]), 4)
    want_ids, _ = _reference_ids([[0.0, -0.0, 3.0, 0.0], [-0.0, 3.0, 4.0]])
    assert column.forward.view().tolist() == want_ids
    assert column.cardinality == 3


def test_multi_value_ids_and_postings():
    column = DictionaryColumn(_spec("STRING", single=False), inverted=True)
    lists = [["a", "b"], [], ["b", "b", "c"], ["d"]]
    column.append(pa.array(lists, type=pa.list_(pa.string())), 0)
    column.append(pa.array([["c", "e"]], type=pa.list_(pa.string())), 4)
    want_ids, want_values = _reference_ids([[v for row in lists for v in row], ["c", "e"]])
    assert column.forward.view().tolist() == want_ids
    assert column.arrival_values(column.cardinality).to_pylist() == want_values
    assert column.offsets.view().tolist() == [0, 2, 2, 5, 6, 8]


def test_snapshot_rows_without_sorting_equal_the_rows_through_the_sorted_dictionary():
    from engine.ingest import records_to_batch
    from engine.realtime import MutableSegment
    from engine.spi import TableConfig

    schema = Schema.from_json({
        "schemaName": "t",
        "dimensionFieldSpecs": [{"name": "s", "dataType": "STRING"},
                                {"name": "i", "dataType": "INT"}],
        "metricFieldSpecs": [{"name": "d", "dataType": "DOUBLE"}],
    })  # fmt: skip
    stream = {"streamType": "kafka", "stream.kafka.topic.name": "t",
              "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
              "KafkaJSONMessageDecoder"}  # fmt: skip
    config = TableConfig.from_json({
        "tableName": "t", "tableType": "REALTIME",
        "tableIndexConfig": {"invertedIndexColumns": ["s"], "streamConfigs": stream},
    })  # fmt: skip
    segment = MutableSegment("t__0__0__20260101T0000Z", schema, config)
    rng = random.Random(7)
    for _ in range(12):
        segment.index(records_to_batch([
            {"s": f"k{rng.randint(0, 300)}", "i": rng.randint(-5, 5), "d": rng.random()}
            for _ in range(rng.randint(1, 200))
        ]))  # fmt: skip
    snapshot = segment.snapshot()
    table = snapshot.to_arrow()
    for name in ("s", "i", "d"):
        through_sorted = snapshot.column(name).values()
        assert table.column(name).to_pylist() == list(np.asarray(through_sorted).tolist())


def test_text_ids_are_kept_by_hash_without_a_dict():
    column = DictionaryColumn(_spec("STRING"), inverted=False)
    column.append(pa.array([f"id-{i}" for i in range(5000)]), 0)
    assert column._ids is None and column.cardinality == 5000
    assert column._text_ids.nbytes == 12 * 5000


@pytest.mark.parametrize(
    "batches",
    [
        [["aa", "bb", "cc"]],  # a collision among a batch's new values
        [["a", "bb"], ["ccc", "dd", "a"], ["bb", "ee", "ccc", "x"]],  # a new value hits an old one
    ],
    ids=["within a batch", "across batches"],
)
def test_a_hash_collision_falls_back_to_exact_ids(monkeypatch, batches):
    from engine.realtime import text_ids

    monkeypatch.setattr(text_ids, "value_hash", len)  # every value of one length collides
    column = DictionaryColumn(_spec("STRING"), inverted=True)
    first = 0
    for batch in batches:
        column.append(pa.array(batch, type=pa.string()), first)
        first += len(batch)
    want_ids, want_values = _reference_ids(batches)
    assert column.forward.view().tolist() == want_ids
    assert column.arrival_values(column.cardinality).to_pylist() == want_values
    assert column._ids is not None  # exact from the collision on
    column.append(pa.array(["bb", "zz"]), first)
    assert column.forward.view().tolist()[-2:] == [want_values.index("bb"), len(want_values)]
